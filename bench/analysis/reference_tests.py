#!/usr/bin/python3
"""Reference for `nabla analyze tests FILE`: the same three tests with the
libraries people check against (Debian's scipy 1.10 and statsmodels 0.13.5).

    /usr/bin/python3 bench/analysis/reference_tests.py FILE.csv [--adf-fixed-lag L] > ref.json

FILE has a header and columns t_ns,latency_ns. Anderson-Darling (expon) on the
gaps of t_ns, ADF (statsmodels defaults: constant, AIC lag search) and
Spearman lag-1 autocorrelation on latency_ns. Prints JSON with the statistics
under the CLI's keys plus compute-only seconds per step ("seconds"); the
end-to-end time (interpreter start, imports, CSV parsing, compute) is measured
by the caller around the whole process.

--adf-fixed-lag L runs adfuller(x, maxlag=L, autolag=None): one regression at
lag L instead of statsmodels' AIC search. stats_vs_scipy.sh uses it above
200k rows with L = the lag nabla chose, because the default search does not
fit in this machine's memory at 1M rows: _autolag keeps every fitted model
(each with its own copy of a 1M-row design), and a run was killed at 20 GB RSS
after 32 minutes. It checks the statistic, p-value and nobs at that lag; the
lag choice itself is checked against the full search at 100k rows.
"""
import json
import sys
import time

import numpy as np
import pandas as pd
import scipy.stats as st
from statsmodels.tsa.stattools import adfuller


def main(path, fixed_lag=None):
    t0 = time.perf_counter()
    frame = pd.read_csv(path, dtype={"t_ns": np.float64, "latency_ns": np.float64})
    t_ns = frame["t_ns"].to_numpy()
    latency = frame["latency_ns"].to_numpy()
    t1 = time.perf_counter()

    ad = st.anderson(np.diff(t_ns), dist="expon")
    t2 = time.perf_counter()

    if fixed_lag is None:
        stat, pvalue, usedlag, nobs, crit, icbest = adfuller(latency)
    else:
        stat, pvalue, usedlag, nobs, crit = adfuller(latency, maxlag=fixed_lag, autolag=None)
        icbest = None
    t3 = time.perf_counter()

    sp = st.spearmanr(latency[:-1], latency[1:])
    t4 = time.perf_counter()

    out = {
        "rows": int(len(latency)),
        "anderson_darling": {
            "statistic": float(ad.statistic),
            "critical_values": [float(v) for v in ad.critical_values],
        },
        "adf": {
            "statistic": float(stat),
            "p_value": float(pvalue),
            "used_lag": int(usedlag),
            "nobs": int(nobs),
            "icbest": None if icbest is None else float(icbest),
            "lag_search": "aic" if fixed_lag is None else "fixed",
        },
        "spearman": {"rho": float(sp.statistic), "p_value": float(sp.pvalue)},
        "seconds": {
            "parse": t1 - t0,
            "anderson_darling": t2 - t1,
            "adf": t3 - t2,
            "spearman": t4 - t3,
            "compute": t4 - t1,
        },
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    if len(sys.argv) == 2:
        main(sys.argv[1])
    elif len(sys.argv) == 4 and sys.argv[2] == "--adf-fixed-lag":
        main(sys.argv[1], int(sys.argv[3]))
    else:
        sys.exit("usage: reference_tests.py FILE.csv [--adf-fixed-lag L]")
