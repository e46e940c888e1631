// The report page: reads the data block (id "nabla-data") that `nabla report`
// wrote and renders the header, tables and Vega-Lite charts. When every chart
// has rendered it sets data-nabla-render on <html> to "ok", or to "error"
// with the messages in #nabla-errors, so a headless browser can tell.
(function () {
  'use strict';
  const errors = [];
  window.addEventListener('error', (e) => errors.push('error: ' + e.message));
  window.addEventListener('unhandledrejection', (e) => errors.push('rejection: ' + e.reason));
  const consoleError = console.error.bind(console);
  console.error = (...args) => { errors.push('console: ' + args.join(' ')); consoleError(...args); };

  const pending = [];

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  function fmt(v) {
    if (v === null || v === undefined) return '–';
    if (typeof v === 'number') return Number.isInteger(v) ? String(v) : Number(v.toPrecision(6)).toString();
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v)) return v.join('; ');
    return String(v);
  }

  function renderTable(t) {
    const head = el('tr', {}, ...t.columns.map((c) => el('th', {}, c)));
    const rows = t.rows.map((r) => el('tr', {}, ...r.map((v) =>
      el('td', typeof v === 'number' ? { class: 'num' } : {}, fmt(v)))));
    return el('table', {}, el('thead', {}, head), el('tbody', {}, ...rows));
  }

  function objectTable(rows, columns) {
    return renderTable({ columns: columns, rows: rows.map((r) => columns.map((c) => r[c])) });
  }

  function renderChart(c) {
    const plot = el('div', { class: 'plot' });
    const box = el('div', { class: 'nabla-chart', 'data-kind': c.kind }, el('h4', {}, c.title), plot);
    const options = { actions: false, renderer: 'svg', mode: 'vega-lite' };
    pending.push(vegaEmbed(plot, c.spec, options).then(() => box.setAttribute('data-rendered', '1'))
      .catch((e) => { errors.push(c.kind + ': ' + e); box.setAttribute('data-rendered', 'error'); }));
    return box;
  }

  function charts(list) { return (list || []).map(renderChart); }

  // The answer: status, gradient matrix, costliest links, verdicts, warnings.
  function ciText(v) {
    return fmt2(v.value) + (v.ci_low === null ? '' : ' [' + fmt2(v.ci_low) + ', ' + fmt2(v.ci_high) + ']');
  }

  // Two decimals, and no "-0.00" for a value that rounds to zero.
  function fmt2(v) { return v === null || v === undefined ? '–' : (Math.abs(v) < 0.005 ? 0 : Number(v)).toFixed(2); }

  function matrixCell(cell, largest) {
    if (!cell) return el('td', { class: 'cell-none' }, '–');
    const share = largest > 0 ? Math.abs(cell.value) / largest : 0;
    const td = el('td', { class: 'num gradient-cell', style: 'background: rgba(192, 57, 43, ' + (0.05 + 0.5 * share).toFixed(3) + ')' },
      el('span', { class: 'gradient-value' }, fmt2(cell.value)),
      cell.ci_low === null ? null : el('span', { class: 'ci' }, ' [' + fmt2(cell.ci_low) + ', ' + fmt2(cell.ci_high) + ']'));
    if (cell.truth !== null) {
      td.append(el('br'), el('span', { class: 'truth verdict-' + cell.verdict, title: cell.why },
        'truth ' + fmt2(cell.truth) + ' ' + (cell.verdict === 'pass' ? '✓ pass' : '✗ fail')));
      td.setAttribute('data-verdict', cell.verdict);
    }
    return td;
  }

  function gradientMatrix(m) {
    const head = el('tr', {}, el('th', {}, 'link \\ type'), ...m.types.map((t) => el('th', {}, t)));
    const rows = m.rows.map((r) => el('tr', { 'data-link-id': r.link_id },
      el('th', { class: 'link-name' }, r.link, r.measured ? null : el('span', { class: 'no' }, ' (not measured)')),
      ...r.cells.map((c) => matrixCell(c, m.largest))));
    return el('table', { class: 'gradient-matrix' }, el('thead', {}, head), el('tbody', {}, ...rows));
  }

  function verdictItem(v) {
    const mark = v.ok === true ? '✓' : v.ok === false ? '✗' : '?';
    const cls = v.ok === true ? 'yes' : v.ok === false ? 'no' : 'note';
    const item = el('li', { class: 'verdict', 'data-kind': v.kind }, el('span', { class: cls }, mark + ' '), v.text);
    if (v.details.length) {
      item.append(el('details', {}, el('summary', {}, v.details.length + ' item(s)'),
        el('ul', {}, ...v.details.map((d) => el('li', {}, d)))));
    }
    return item;
  }

  function answerSection(a) {
    const out = [el('p', { class: 'run-status ' + (a.ok ? 'status-complete' : 'status-failed') }, a.status)];
    if (a.matrix.rows.length && a.matrix.types.length) {
      out.push(el('h4', {}, 'gradient per link and type (ns of response per ns of delay, CI in brackets; darker = larger)'),
        gradientMatrix(a.matrix));
    }
    if (a.top_links.length) {
      out.push(el('h4', {}, 'the links that cost each type the most'), el('ul', { class: 'top-links' },
        ...a.top_links.map((t) => el('li', {}, el('strong', {}, t.type + ': '),
          t.links.map((l) => l.link + ' ' + ciText(l)).join(' · ')))));
    }
    if (a.verdicts.length) out.push(el('h4', {}, 'verdicts'), el('ul', { class: 'verdicts' }, ...a.verdicts.map(verdictItem)));
    for (const w of a.warnings) out.push(el('p', { class: 'warning' }, 'warning: ' + w));
    return el('section', { class: 'answer' }, ...out);
  }

  function graphSection(g) {
    const out = [el('h2', {}, 'Link graph')];
    if (g.error) {
      out.push(el('p', { class: 'error' }, g.error));
      return out;
    }
    const box = el('div', { class: 'nabla-graph', 'data-kind': 'link-graph' });
    box.innerHTML = g.svg;
    out.push(el('p', { class: 'note' }, 'one edge per one-way link, labelled with its gradient per type; width and colour by the largest |gradient|; laid out by Graphviz'), box);
    return out;
  }

  function headerSection(h, missing) {
    const failedChecks = h.status_line && h.status_line !== h.status;
    const statusCell = el('span', { class: 'status-' + (failedChecks ? 'failed' : h.status) }, h.status_line || h.status);
    const nodes = (h.nodes || []).map((n) => n.name + (n.processes.length ? ' (' + n.processes.join(', ') + ')' : ''));
    const rows = [['run', h.run_id], ['kind', h.kind], ['status', statusCell], ['campaign', h.campaign],
      ['seed', h.seed], ['started', h.started], ['duration (s)', h.duration_s], ['samples', h.samples],
      ['nodes', nodes.join(', ')], ['nabla version', h.tool_version]];
    const table = el('table', { class: 'header' }, ...rows.map(([k, v]) =>
      el('tr', {}, el('th', {}, k), el('td', {}, v instanceof Node ? v : fmt(v)))));
    const out = [table];
    if (h.error) out.push(el('p', { class: 'error' }, 'failed: ' + h.error));
    if (missing.length) {
      out.push(el('div', { class: 'missing' }, el('strong', {}, 'not in the database for this run:'),
        el('ul', {}, ...missing.map((m) => el('li', {}, m)))));
    }
    if (h.campaign_file) {
      out.push(el('details', {}, el('summary', {}, 'campaign file (as stored)'), el('pre', {}, h.campaign_file)));
    }
    return out;
  }

  function linkSection(link, gradients) {
    const own = gradients.filter((g) => g.link_id === link.link_id);
    const parts = [el('h3', {}, link.label)];
    if (link.note) parts.push(el('p', { class: 'note' }, link.note));
    parts.push(...charts(link.charts));
    if (own.length) {
      parts.push(objectTable(own, ['type', 'value', 'ci_low', 'ci_high', 'confidence', 'time_domain',
        'actual_amplitude_ns', 'truth', 'messages_per_txn', 'messages_ci_low', 'messages_ci_high']));
    }
    return el('section', { class: 'link', 'data-link-id': link.link_id }, ...parts);
  }

  function campaignSections(run) {
    const out = [];
    if (run.links.length) {
      out.push(el('h2', {}, 'Links'), ...run.links.map((l) => linkSection(l, run.gradients)));
    }
    if (run.training) {
      const t = run.training;
      out.push(el('h2', {}, 'Training'), objectTable([t], ['bin_width_ns', 'bins', 'chunks', 'k_d', 'amplitude_ns', 'samples']),
        renderTable(t.by_type));
    }
    if (run.injections) {
      out.push(el('h2', {}, 'Injections'), ...charts(run.injections.charts), renderTable(run.injections.table));
    }
    if (run.links.length) out.push(el('h2', {}, 'Predictions'), el('p', { class: 'note' }, run.predictions));
    return out;
  }

  function tailSections(tail) {
    const out = [el('h2', {}, 'Tail latency'), ...charts(tail.charts)];
    if (tail.turns_na) {
      out.push(el('p', { class: 'warning' }, 'the verdict turns n/a at ' + fmt(tail.turns_na.rate_rps) +
        ' rps (p' + fmt(tail.turns_na.percentile) + '): ' + fmt(tail.turns_na.reasons)));
    }
    out.push(objectTable(tail.results, ['type', 'metric', 'rate_rps', 'throughput_rps', 'percentile',
      'value_ns', 'ci_low_ns', 'ci_high_ns', 'verdict', 'reasons', 'samples']));
    out.push(el('h4', {}, 'Lateness'), renderTable(tail.lateness), el('p', { class: 'note' }, tail.not_stored));
    out.push(el('h4', {}, 'Self-correcting checks per rate point'));
    if (tail.checks_note) out.push(el('p', { class: 'note tail-checks-note' }, tail.checks_note));
    if (tail.checks && tail.checks.length) out.push(checksTable(tail.checks));
    return out;
  }

  // The controller's checks: pass, fail or not applied, with the statistic,
  // the bound it was held to, the p-value and the sample count.
  function checksTable(checks) {
    const columns = ['rate (rps)', 'check', 'outcome', 'statistic', 'threshold', 'p-value', 'samples', 'detail'];
    const head = el('tr', {}, ...columns.map((c) => el('th', {}, c)));
    const mark = { pass: '✓ pass', fail: '✗ fail' };
    const rows = checks.map((c) => el('tr', { 'data-outcome': c.outcome },
      el('td', { class: 'num' }, fmt(c.rate_rps)), el('td', {}, c.check),
      el('td', {}, el('span', { class: c.outcome === 'pass' ? 'yes' : c.outcome === 'fail' ? 'no' : 'note' }, mark[c.outcome] || c.outcome)),
      el('td', { class: 'num' }, fmt(c.statistic)), el('td', { class: 'num' }, fmt(c.threshold)),
      el('td', { class: 'num' }, fmt(c.p_value)), el('td', { class: 'num' }, fmt(c.samples)), el('td', {}, c.detail)));
    return el('table', { class: 'tail-checks' }, el('thead', {}, head), el('tbody', {}, ...rows));
  }

  // A term's number as people read it: shares in percent, latencies in ms.
  function termValue(term, v) {
    if (v === null || v === undefined) return '–';
    if (term === 'errors' || term === 'throughput') return Number((100 * v).toPrecision(3)) + '%';
    return Number((v / 1e6).toPrecision(4)) + ' ms';
  }

  function changeText(v, low, high) {
    if (v === null || v === undefined) return '–';
    return termValue('', v) + (low === null ? '' : ' [' + termValue('', low) + ', ' + termValue('', high) + ']');
  }

  function verdictSpan(v) {
    return el('span', { class: v === 'pass' ? 'yes' : v === 'fail' ? 'no' : 'note' }, v);
  }

  // Each fault experiment: its links and fault, the change it caused against
  // the gradients' prediction, and every SLO term per window with its bound.
  function experimentSection(e) {
    const summary = el('table', {},
      el('tr', {}, el('th', {}, 'links'), el('td', {}, (e.links || []).join(', '))),
      el('tr', {}, el('th', {}, 'fault window (s)'), el('td', {}, fmt((e.fault_end_ns - e.fault_start_ns) / 1e9))),
      el('tr', {}, el('th', {}, 'mean delay'), el('td', {}, termValue('', e.mean_delay_ns))),
      el('tr', {}, el('th', {}, 'observed change'), el('td', {}, changeText(e.observed_change_ns, e.observed_ci_low_ns, e.observed_ci_high_ns))),
      el('tr', {}, el('th', {}, 'predicted by the gradients'), el('td', {}, changeText(e.predicted_change_ns, e.predicted_ci_low_ns, e.predicted_ci_high_ns))));
    const head = el('tr', {}, ...['window', 'term', 'bound', 'value', 'CI low', 'CI high', 'verdict', 'note', 'samples'].map((c) => el('th', {}, c)));
    const rows = e.checks.map((c) => el('tr', { 'data-verdict': c.verdict }, el('td', {}, c.window), el('td', {}, c.term),
      el('td', { class: 'num' }, termValue(c.term, c.bound)), el('td', { class: 'num' }, termValue(c.term, c.value)),
      el('td', { class: 'num' }, termValue(c.term, c.ci_low)), el('td', { class: 'num' }, termValue(c.term, c.ci_high)),
      el('td', {}, verdictSpan(c.verdict)), el('td', {}, fmt(c.note)), el('td', { class: 'num' }, fmt(c.samples))));
    return el('section', { class: 'experiment' }, el('h3', {}, e.name + ': SLO ', verdictSpan(e.verdict)), summary,
      ...charts(e.charts), el('table', { class: 'experiment-checks' }, el('thead', {}, head), el('tbody', {}, ...rows)));
  }

  function runSection(run) {
    const h = run.header;
    const parts = [el('h2', {}, 'Run ' + h.run_id + ' (' + h.kind + ')'), answerSection(run.answer)];
    if (run.graph) parts.push(...graphSection(run.graph));
    parts.push(el('h2', {}, 'Run details'), ...headerSection(h, run.missing));
    parts.push(...campaignSections(run));
    if (run.experiments && run.experiments.length) {
      parts.push(el('h2', {}, 'Experiments'), ...run.experiments.map(experimentSection));
    }
    if (run.tail) parts.push(...tailSections(run.tail));
    return el('section', { class: 'run', id: 'run-' + h.run_id }, ...parts);
  }

  function comparisonSection(c) {
    const out = [el('h2', {}, 'Comparison: run ' + c.a + ' (A) and run ' + c.b + ' (B)'), ...charts(c.charts)];
    if (c.gradients.length) {
      out.push(el('h4', {}, 'gradients'), objectTable(c.gradients, ['link', 'type', 'a', 'a_ci_low', 'a_ci_high',
        'b', 'b_ci_low', 'b_ci_high', 'delta', 'cis_overlap']));
    }
    if (c.percentiles.length) {
      out.push(el('h4', {}, 'percentiles'), objectTable(c.percentiles, ['type', 'metric', 'rate_rps',
        'percentile', 'a_ns', 'b_ns', 'delta_ns', 'cis_overlap']));
    }
    if (!c.gradients.length && !c.percentiles.length) out.push(el('p', { class: 'note' }, 'the two runs share no gradient or percentile'));
    return el('section', { class: 'comparison' }, ...out);
  }

  function finish(status) {
    const root = document.documentElement;
    const charts = document.querySelectorAll('.nabla-chart').length;
    if (errors.length) {
      const box = document.getElementById('nabla-errors');
      box.hidden = false;
      box.textContent = errors.join('\n');
      root.setAttribute('data-nabla-render', 'error');
      status.textContent = 'rendering failed: ' + errors.length + ' error(s)';
    } else {
      root.setAttribute('data-nabla-render', 'ok');
      status.textContent = charts + ' chart(s)';
    }
  }

  function main() {
    const status = document.getElementById('nabla-status');
    const data = JSON.parse(document.getElementById('nabla-data').textContent);
    const main = document.getElementById('nabla-report');
    document.getElementById('nabla-footer').textContent = 'generated ' + data.generated + ' from ' + data.db +
      ' · plots: vega ' + vega.version + ', vega-lite ' + vegaLite.version + ', vega-embed ' + vegaEmbed.version;
    for (const run of data.runs) main.append(runSection(run));
    if (data.comparison) main.append(comparisonSection(data.comparison));
    Promise.allSettled(pending).then(() => finish(status));
  }

  try {
    main();
  } catch (e) {
    errors.push('page: ' + e);
    finish(document.getElementById('nabla-status'));
  }
})();
