#pragma once
// MacKinnon's response-surface approximations for the Dickey–Fuller tau
// statistic, for the regression with a constant and one I(1) series (the
// Augmented Dickey–Fuller test with regression 'c').
//
// p-values: MacKinnon (1994), "Approximate asymptotic distribution functions
// for unit-root and cointegration tests", JBES 12(2), table 3 (tau, N = 1,
// constant) — the same numbers statsmodels' `adfvalues.mackinnonp` uses.
// Critical values: MacKinnon (2010), "Critical values for cointegration
// tests", Queen's Economics Working Paper 1227, table 2 — as statsmodels'
// `adfvalues.mackinnoncrit(N=1, regression="c", nobs=...)`.
#include <array>
#include <cstdint>

namespace nabla::analysis {

// Approximate p-value of an ADF tau statistic (left tail: small tau rejects
// the unit root). Returns exactly 1 above tau = 2.74 and exactly 0 below
// tau = -18.83, where the approximation is cut off (as statsmodels does).
// NaN in, NaN out.
double mackinnon_p_value(double tau);

// Finite-sample critical values at 1 %, 5 % and 10 % for a regression with
// `nobs` observations (nobs >= 1); the asymptotic values when nobs == 0.
std::array<double, 3> mackinnon_critical_values(std::int64_t nobs);

}  // namespace nabla::analysis
