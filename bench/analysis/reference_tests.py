#!/usr/bin/python3
"""Reference for `nabla analyze tests FILE`: the same three tests with the
libraries people check against (Debian's scipy 1.10 and statsmodels 0.13.5).

    /usr/bin/python3 bench/analysis/reference_tests.py FILE.csv > ref.json

FILE has a header and columns t_ns,latency_ns. Anderson-Darling (expon) on the
gaps of t_ns, ADF (statsmodels defaults: constant, AIC lag search) and
Spearman lag-1 autocorrelation on latency_ns. Prints JSON with the statistics
under the CLI's keys plus compute-only seconds per step ("seconds"); the
end-to-end time (interpreter start, imports, CSV parsing, compute) is measured
by the caller around the whole process.
"""
import json
import sys
import time

import numpy as np
import pandas as pd
import scipy.stats as st
from statsmodels.tsa.stattools import adfuller


def main(path):
    t0 = time.perf_counter()
    frame = pd.read_csv(path, dtype={"t_ns": np.float64, "latency_ns": np.float64})
    t_ns = frame["t_ns"].to_numpy()
    latency = frame["latency_ns"].to_numpy()
    t1 = time.perf_counter()

    ad = st.anderson(np.diff(t_ns), dist="expon")
    t2 = time.perf_counter()

    stat, pvalue, usedlag, nobs, crit, icbest = adfuller(latency)
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
            "icbest": float(icbest),
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
    if len(sys.argv) != 2:
        sys.exit("usage: reference_tests.py FILE.csv")
    main(sys.argv[1])
