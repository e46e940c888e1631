#!/usr/bin/python3
"""Reference values for tests/unit/analysis/{anderson_darling,adf,spearman}_test.cc.

Run with Debian's interpreter (scipy 1.10, statsmodels 0.13.5):
    /usr/bin/python3 bench/analysis/test_vectors.py

The test inputs come from a 64-bit LCG and integer arithmetic only (plus
multiplications by 0.5 / 0.75, exact in binary), so the C++ tests rebuild the
same doubles bit for bit without pasting long arrays.
"""
import numpy as np
import scipy.stats as st
from statsmodels.tsa.adfvalues import mackinnoncrit, mackinnonp
from statsmodels.tsa.stattools import adfuller

MASK = (1 << 64) - 1


class Lcg:
    """Knuth's MMIX LCG; small(k) is an integer in [0, k)."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) & MASK
        return self.s

    def small(self, k):
        return (self.next() >> 33) % k


def white_noise(seed, n):
    g = Lcg(seed)
    return np.array([float(g.small(1001) - 500) for _ in range(n)])


def random_walk(seed, n):
    return np.cumsum(white_noise(seed, n))  # integer partial sums: exact


def ar1_half(seed, n):
    e = white_noise(seed, n)
    y = np.empty(n)
    prev = 0.0
    for i in range(n):
        prev = 0.5 * prev + e[i]
        y[i] = prev
    return y


def ma1(seed, n):
    e = white_noise(seed, n + 1)
    return np.array([e[i + 1] + 0.75 * e[i] for i in range(n)])


def geometric_gaps(seed, n, one_in):
    """Draws until small(one_in) == 0, counted: a discrete exponential with ties."""
    g = Lcg(seed)
    out = []
    for _ in range(n):
        k = 1
        while g.small(one_in) != 0:
            k += 1
        out.append(float(k))
    return np.array(out)


def uniform_ints(seed, n, k):
    g = Lcg(seed)
    return np.array([float(g.small(k)) for _ in range(n)])


def show(label, *values):
    print(label, " ".join(repr(float(v)) if not isinstance(v, (int, np.integer)) else str(v)
                          for v in values))


def ad(label, x):
    r = st.anderson(x, dist="expon")
    show(label, r.statistic, *r.critical_values)


def adf(label, x, **kw):
    r = adfuller(x, **kw)
    show(label, r[0], r[1], r[2], r[3], r[4]["1%"], r[4]["5%"], r[4]["10%"], r[5])


def sp(label, a, b):
    r = st.spearmanr(a, b)
    show(label, r.statistic, r.pvalue)


if __name__ == "__main__":
    print("# Anderson-Darling (expon): statistic, critical values 15/10/5/2.5/1 %")
    ad("ad geometric(7,200,50)", geometric_gaps(7, 200, 50))
    ad("ad geometric(3,40,20)", geometric_gaps(3, 40, 20))
    ad("ad uniform(11,150,1000)+1", uniform_ints(11, 150, 1000) + 1.0)
    ad("ad literal5", np.array([0.5, 1.25, 2.0, 0.125, 3.5]))
    ad("ad n1000 crit", geometric_gaps(5, 1000, 10))
    print("# ADF: stat, p, usedlag, nobs, crit 1/5/10 %, icbest")
    adf("adf white(1,200)", white_noise(1, 200))
    adf("adf walk(2,200)", random_walk(2, 200))
    adf("adf ar1(3,500)", ar1_half(3, 500))
    adf("adf ma1(4,300)", ma1(4, 300))
    adf("adf ma1(4,300) maxlag=3", ma1(4, 300), maxlag=3)
    adf("adf ma1(13,20000)", ma1(13, 20000))
    adf("adf white(12,1000)", white_noise(12, 1000))
    adf("adf white(5,20)", white_noise(5, 20))
    adf("adf n4", np.array([1.0, 3.0, 2.0, 5.0]))
    print("# mackinnonp(tau, 'c') and mackinnoncrit(1, 'c', nobs)")
    for tau in [-25.0, -18.8, -10.0, -4.0, -2.5, -1.61, -1.6, -0.5, 0.0, 1.5, 2.7, 3.0]:
        show("p(%r)" % tau, mackinnonp(tau, regression="c", N=1))
    for nobs in [10, 100, 1000000]:
        show("crit(%d)" % nobs, *mackinnoncrit(N=1, regression="c", nobs=nobs))
    show("crit(inf)", *mackinnoncrit(N=1, regression="c"))
    print("# Spearman: rho, p")
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0])
    b = np.array([2.0, 7.0, 1.0, 8.0, 2.0, 8.0, 1.0, 8.0, 2.0, 8.0, 4.0, 5.0])
    sp("sp ties", a, b)
    y = ar1_half(6, 300)
    for lag in [1, 2, 3, 4, 8]:
        sp("sp ar1(6,300) lag %d" % lag, y[:-lag], y[lag:])
    w = white_noise(8, 100)
    sp("sp white(8,100) lag 1", w[:-1], w[1:])
    u = uniform_ints(9, 60, 5)  # many ties
    sp("sp ties(9,60,5) lag 1", u[:-1], u[1:])
    z = ma1(10, 400)
    for lag in [1, 2, 4]:
        sp("sp ma1(10,400) lag %d" % lag, z[:-lag], z[lag:])
