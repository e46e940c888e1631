#pragma once
// The three hypothesis tests of lancet's self-correcting methodology (§2.3,
// §4.3), each matching the reference implementation people check against:
//   anderson_darling_exponential  — inter-arrival gaps are exponential (scipy)
//   adf_test                      — latency series is stationary (statsmodels)
//   spearman_autocorrelation      — latency samples are independent (scipy)
#include "nabla/analysis/adf.hh"
#include "nabla/analysis/anderson_darling.hh"
#include "nabla/analysis/mackinnon.hh"
#include "nabla/analysis/spearman.hh"
