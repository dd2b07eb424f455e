"""Vectorized special functions for the math kernels: erf, erfc, lgamma and digamma in float64,
written against an array module `xp` (numpy has none of them, and scipy is not a dependency).

Each loops over a fixed number of series or continued-fraction terms, never over elements, and
reaches float64 to within a few ulps (tests compare with Python's math.erf/erfc/lgamma):
- erf: the everywhere-positive series erf(x) = 2/sqrt(pi) x e^-x^2 sum (2x^2)^n / (2n+1)!!
  below |x| = 1.5, 1 - erfc above;
- erfc: Laplace's continued fraction from |x| = 1.5 up, 1 - erf below
  (with fewer terms when the result is rounded to float32 or narrower);
- lgamma: a Taylor series around 2 on [1.5, 2.5) (exact zeros at 1 and 2), the recurrence
  Gamma(x+1) = x Gamma(x) to move other arguments there, Stirling's series from 12 up, and the
  reflection formula for negative arguments;
- digamma: the recurrence up to 10 and the asymptotic series there, reflection below 0 (near its
  positive root 1.4616... the error is ~1e-16 absolute, as in Eigen's own implementation).
- ndtri: Acklam's rational approximation refined by one Halley step; erfinv through ndtri as
  TensorFlow computes it.
Special values follow TensorFlow (C's lgamma; Eigen's digamma gives NaN at the poles), except
that erf(+-inf) is +-1 in float64 too (TensorFlow's float64 Erf overflows x*x and returns NaN for
|x| > 1.3e154).
"""
from __future__ import annotations

import math

import numpy as np

SQRT_PI = math.sqrt(math.pi)
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
EULER_GAMMA = 0.57721566490153286061

ERF_SERIES_LIMIT = 1.5
# Terms of the series and of the continued fraction for float64 precision (1e-15) and for
# results rounded to float32 or narrower (1e-9), which costs less than half.
ERF_TERMS = {"double": (32, 40), "single": (16, 16)}


def _exp_minus_square(xp, x):
    """exp(-x*x) without the rounding error of x*x (which exp magnifies by x^2): x = hi + lo
    with hi a multiple of 1/16, so hi*hi is exact."""
    hi = xp.floor(x * 16) / 16
    return xp.exp(-hi * hi) * xp.exp(-(x - hi) * (x + hi))


def _erf_series(xp, x, terms: int):
    """erf(x) for 0 <= x < ERF_SERIES_LIMIT (all terms positive: no cancellation)."""
    two_x2 = 2 * x * x
    term = xp.ones_like(x)
    total = xp.ones_like(x)
    for n in range(1, terms):
        term = term * two_x2 / (2 * n + 1)
        total = total + term
    return (2 / SQRT_PI) * x * _exp_minus_square(xp, x) * total


def _erfc_fraction(xp, x, terms: int):
    """erfc(x) for x >= ERF_SERIES_LIMIT: Laplace's continued fraction
    erfc(x) = 2x e^-x^2 / sqrt(pi) / (2x^2+1 - 1*2/(2x^2+5 - 3*4/(2x^2+9 - ...))),
    evaluated from its tail."""
    two_x2 = 2 * x * x
    denominator = two_x2 + 4 * terms + 1
    for k in range(terms, 0, -1):
        denominator = two_x2 + (4 * k - 3) - (2 * k - 1) * (2 * k) / denominator
    # inf gives inf / inf: erfc(inf) is 0.
    return xp.where(xp.isinf(x), 0.0, (2 / SQRT_PI) * x * _exp_minus_square(xp, x) / denominator)


def _erf_parts(xp, x, precision: str):
    """(erf, erfc) of |x|, each element from whichever evaluation is accurate for it."""
    series_terms, fraction_terms = ERF_TERMS[precision]
    a = xp.abs(x)
    small = a < ERF_SERIES_LIMIT
    large = ~small   # NaN included: it stays NaN
    erf_abs, erfc_abs = xp.empty_like(a), xp.empty_like(a)
    series = _erf_series(xp, a[small], series_terms)
    erf_abs[small], erfc_abs[small] = series, 1 - series
    fraction = _erfc_fraction(xp, a[large], fraction_terms)
    erf_abs[large], erfc_abs[large] = 1 - fraction, fraction
    return erf_abs, erfc_abs


def erf(xp, x, precision: str = "double"):
    erf_abs, _ = _erf_parts(xp, x, precision)
    return xp.copysign(erf_abs, x)


def erfc(xp, x, precision: str = "double"):
    _, erfc_abs = _erf_parts(xp, x, precision)
    return xp.where(x < 0, 2 - erfc_abs, erfc_abs)


# --- lgamma ---------------------------------------------------------------------------------

def _zeta_minus_one(s: int, cut: int = 20) -> float:
    """zeta(s) - 1 for an integer s >= 2: the first terms summed, the tail by Euler-Maclaurin."""
    head = sum(n ** -s for n in range(2, cut))
    tail = cut ** (1 - s) / (s - 1) + cut ** -s / 2
    rising = s  # s (s+1) ... (s+2j-2)
    for j, bernoulli in enumerate((1 / 6, -1 / 30, 1 / 42, -1 / 30), start=1):
        tail += bernoulli / math.factorial(2 * j) * rising * cut ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return head + tail


# lgamma(2 + z) = (1 - gamma) z + sum_{k>=2} (-1)^k (zeta(k) - 1) / k z^k, for |z| <= 1/2;
# 32 terms reach 1e-19 at the interval's ends.
_LGAMMA_AT_2 = [0.0, 1 - EULER_GAMMA] + [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, 32)]
# Stirling's series:
# lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum B_2k / (2k (2k-1) x^(2k-1)).
_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156]
STIRLING_FROM = 12.0


def _polynomial(xp, coefficients, z):
    """sum c_k z^k by Horner's rule."""
    total = xp.zeros_like(z)
    for c in reversed(coefficients):
        total = total * z + c
    return total


def _lgamma_positive(xp, x):
    """lgamma(x) for x > 0 (other entries give garbage, replaced by the caller)."""
    large = x >= STIRLING_FROM
    # Move x into [1.5, 2.5): down by at most 10 steps (x < 12), up by at most 2 (x > 0), keeping
    # the product of the factors taken off (lgamma(x) = lgamma(x - 1) + log(x - 1)) or put on,
    # and the net shift: z - 2 = x - (2 - shift) is exact, where z + 1 would round for small z.
    z = xp.where(large, 2.0, x)
    shift = xp.zeros_like(z)
    taken_off = xp.ones_like(z)
    put_on = xp.ones_like(z)
    for _ in range(10):
        step = z >= 2.5
        z = xp.where(step, z - 1, z)
        shift = xp.where(step, shift - 1, shift)
        taken_off = xp.where(step, taken_off * z, taken_off)
    for _ in range(2):
        step = z < 1.5
        put_on = xp.where(step, put_on * z, put_on)
        z = xp.where(step, z + 1, z)
        shift = xp.where(step, shift + 1, shift)
    offset = xp.where(large, 0.0, x - (2 - shift))
    near_two = _polynomial(xp, _LGAMMA_AT_2, offset) + xp.log(taken_off) - xp.log(put_on)
    y = xp.where(large, x, STIRLING_FROM)
    stirling = ((y - 0.5) * xp.log(y) - y + HALF_LOG_2PI
                + _polynomial(xp, _STIRLING, 1 / (y * y)) / y)
    return xp.where(large, stirling, near_two)


def _abs_sin_pi(xp, x):
    """|sin(pi x)|, accurate near the integers (the poles of lgamma) thanks to the reduction."""
    return xp.abs(xp.sin(math.pi * (x - xp.round(x))))


def lgamma(xp, x):
    negative = x < 0
    reflected = xp.where(negative, 1 - x, x)
    positive = _lgamma_positive(xp, xp.where(xp.isfinite(reflected), reflected, 2.0))
    # lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    reflection = math.log(math.pi) - xp.log(_abs_sin_pi(xp, x)) - positive
    result = xp.where(negative, reflection, positive)
    pole = (x <= 0) & (x == xp.floor(x))
    return xp.where(pole | xp.isinf(x), math.inf, xp.where(xp.isnan(x), x, result))


# --- digamma --------------------------------------------------------------------------------

# digamma(x) = log x - 1/(2x) - sum B_2k / (2k x^2k)
_DIGAMMA_ASYMPTOTIC = [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12]
DIGAMMA_ASYMPTOTIC_FROM = 10.0


def _digamma_positive(xp, x):
    """digamma(x) for x > 0: digamma(x) = digamma(x + 1) - 1/x up to 10, then the series."""
    shifted = xp.zeros_like(x)
    for _ in range(int(DIGAMMA_ASYMPTOTIC_FROM)):
        step = x < DIGAMMA_ASYMPTOTIC_FROM
        shifted = xp.where(step, shifted + 1 / x, shifted)
        x = xp.where(step, x + 1, x)
    inverse_square = 1 / (x * x)
    series = inverse_square * _polynomial(xp, _DIGAMMA_ASYMPTOTIC, inverse_square)
    return xp.log(x) - 0.5 / x - series - shifted


def digamma(xp, x):
    negative = x <= 0
    reflected = xp.where(negative, 1 - x, x)
    positive = _digamma_positive(xp, xp.where(xp.isfinite(reflected), reflected, 1.0))
    # digamma(x) = digamma(1 - x) - pi / tan(pi x); tan has period pi, so reduce x first.
    reflection = positive - math.pi / xp.tan(math.pi * (x - xp.round(x)))
    result = xp.where(negative, reflection, positive)
    pole = negative & (x == xp.floor(x))
    result = xp.where(pole | (x == -math.inf), math.nan, result)
    return xp.where(x == math.inf, math.inf, xp.where(xp.isnan(x), x, result))


# --- ndtri and erfinv -----------------------------------------------------------------------
# Acklam's rational approximations of the standard normal quantile (relative error below
# 1.2e-9): one for the central region |p - 1/2| <= 1/2 - P_LOW, one for the tails. A single Halley
# step against erf (centre) or erfc (tails) then brings them to float64 precision.
_ACKLAM_CENTRE_NUM = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
_ACKLAM_CENTRE_DEN = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                      6.680131188771972e+01, -1.328068155288572e+01, 1.0]
_ACKLAM_TAIL_NUM = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                    -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
_ACKLAM_TAIL_DEN = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                    3.754408661907416e+00, 1.0]
P_LOW = 0.02425
SQRT_2PI = math.sqrt(2 * math.pi)


def _horner(xp, coefficients, z):
    """c_0 z^(n-1) + ... + c_(n-1) (highest power first)."""
    total = xp.zeros_like(z)
    for c in coefficients:
        total = total * z + c
    return total


def _halley(xp, x, error):
    """One Halley step for Phi(x) = p, given error = Phi(x) - p."""
    u = error * SQRT_2PI * xp.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


def ndtri(xp, p):
    """The standard normal quantile Phi^-1(p) of float64 p: -inf at 0, inf at 1, NaN outside
    [0, 1] (TensorFlow's Ndtri)."""
    with np.errstate(all="ignore"):
        centred = p - 0.5                     # exact for p in [0.25, 0.75]
        r = centred * centred
        centre = centred * _horner(xp, _ACKLAM_CENTRE_NUM, r) / _horner(xp, _ACKLAM_CENTRE_DEN, r)
        centre = _halley(xp, centre, 0.5 * erf(xp, centre / math.sqrt(2)) - centred)
        tail_p = xp.minimum(p, 1 - p)        # 1 - p is exact for p >= 1/2
        q = xp.sqrt(-2 * xp.log(xp.where(tail_p > 0, tail_p, 1.0)))
        lower = _horner(xp, _ACKLAM_TAIL_NUM, q) / _horner(xp, _ACKLAM_TAIL_DEN, q)
        refined = _halley(xp, lower, 0.5 * erfc(xp, -lower / math.sqrt(2)) - tail_p)
        lower = xp.where(xp.isfinite(refined), refined, lower)
        lower = xp.where(tail_p > 0, lower, -xp.inf)
        tail = xp.where(p > 0.5, -lower, lower)
        result = xp.where(xp.abs(centred) <= 0.5 - P_LOW, centre, tail)
        return xp.where((p >= 0) & (p <= 1), result, xp.nan)   # NaN stays NaN


def erfinv(xp, x):
    """The inverse error function as TensorFlow computes it: ndtri(x / 2 + 1/2) / sqrt(2), the
    argument rounded in x's own type (which is what limits its precision near 0 and +-1)."""
    half = x.dtype.type(0.5)
    return ndtri(xp, (x * half + half).astype(np.float64)) / math.sqrt(2)
