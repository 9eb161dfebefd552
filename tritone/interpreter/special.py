"""Special functions numpy lacks, in float64, vectorised: inverse error
functions, the scaled complementary error function, gamma, IEEE remainder and
Bessel functions of integer order.

The elementary pieces that Python's `math` has and numpy does not (erf, erfc,
gamma, lgamma, remainder) are applied per element through `np.frompyfunc`;
they are rarely used in kernels. Everything else is built from vectorised
numpy: Newton steps, quadrature, asymptotic series.
"""

from __future__ import annotations

import math

import numpy as np

_SQRT_PI = math.sqrt(math.pi)


def _elementwise(fn, *args) -> np.ndarray:
    arrays = [np.asarray(a, dtype=np.float64) for a in args]
    return np.frompyfunc(fn, len(arrays), 1)(*arrays).astype(np.float64)


def erf(x) -> np.ndarray:
    return _elementwise(math.erf, x)


def erfc(x) -> np.ndarray:
    return _elementwise(math.erfc, x)


def _safe(fn, pole_value):
    def safe(*args):
        try:
            return fn(*args)
        except OverflowError:
            return math.inf
        except ValueError:
            return pole_value(*args)
    return safe


def tgamma(x) -> np.ndarray:
    """Gamma: +-inf at +-0, NaN at negative integers and -inf, inf on overflow."""
    def pole(v):
        return math.copysign(math.inf, v) if v == 0 else math.nan
    return _elementwise(_safe(math.gamma, pole), x)


def lgamma(x) -> np.ndarray:
    """log|Gamma(x)|: +inf at the poles."""
    return _elementwise(_safe(math.lgamma, lambda v: math.inf if not math.isnan(v) else v), x)


def remainder(x, y) -> np.ndarray:
    """IEEE remainder x - n*y, n = x/y rounded to nearest even; NaN for y = 0 or infinite x."""
    return _elementwise(_safe(math.remainder, lambda a, b: math.nan), x, y)


# ---------------------------------------------------------------------------
# Inverse error functions


def _erfinv_guess(log_term, sign) -> np.ndarray:
    """Winitzki's closed-form approximation of erfinv (relative error ~1e-3),
    given log(1 - y^2) so that values of y near +-1 keep their precision."""
    a = 0.147
    t = 2.0 / (math.pi * a) + log_term / 2.0
    return sign * np.sqrt(np.sqrt(t * t - log_term / a) - t)


def _erfinv_central(y) -> np.ndarray:
    """erfinv for |y| < 0.5 (other lanes give garbage): Newton on erf."""
    ys = np.where(np.abs(y) < 0.5, y, 0.0)
    x = _erfinv_guess(np.log((1.0 - ys) * (1.0 + ys)), np.sign(ys))
    for _ in range(4):
        x = x - (erf(x) - ys) / (2.0 / _SQRT_PI * np.exp(-x * x))
    return x


def _erfcinv_tail(w) -> np.ndarray:
    """x >= 0 with erfc(x) = w, for 0 < w <= 1 (other lanes give garbage)."""
    w = np.where((w > 0) & (w <= 1), w, 1.0)
    x = _erfinv_guess(np.log(w * (2.0 - w)), 1.0)
    # Newton on log(erfc(x)) = log(erfcx(x)) - x^2, which keeps its precision
    # where erfc(x) and its derivative underflow.
    target = np.log(w)
    for _ in range(6):
        scaled = erfcx(x)
        step = (np.log(scaled) - x * x - target) * (_SQRT_PI * scaled / 2.0)
        x = x + np.where(np.isfinite(step), step, 0.0)
    return x


def erfcinv(z) -> np.ndarray:
    """x with erfc(x) = z, for z in [0, 2]; inf at 0, -inf at 2, NaN outside."""
    z = np.asarray(z, dtype=np.float64)
    central = np.abs(1.0 - z) < 0.5
    # erfc(-x) = 2 - erfc(x): the lower half mirrors the upper one.
    upper = z <= 1
    tail = _erfcinv_tail(np.where(upper, z, 2.0 - z))
    out = np.where(central, _erfinv_central(1.0 - z), np.where(upper, tail, -tail))
    out = np.where((z < 0) | (z > 2) | np.isnan(z), np.nan, out)
    out = np.where(z == 0, np.inf, out)
    return np.where(z == 2, -np.inf, out)


def erfinv(y) -> np.ndarray:
    """x with erf(x) = y, for y in [-1, 1]; +-inf at +-1, NaN outside."""
    y = np.asarray(y, dtype=np.float64)
    central = np.abs(y) < 0.5
    # Near +-1 solve erfc(x) = 1 - |y|, which is exact there.
    tail = np.copysign(_erfcinv_tail(1.0 - np.abs(y)), y)
    out = np.where(central, _erfinv_central(y), tail)
    out = np.where((np.abs(y) > 1) | np.isnan(y), np.nan, out)
    return np.where(np.abs(y) == 1, np.copysign(np.inf, y), out)


def erfcx(x) -> np.ndarray:
    """exp(x^2) * erfc(x), without overflow for large positive x."""
    x = np.asarray(x, dtype=np.float64)
    moderate = x < 20
    xm = np.where(moderate, x, 0.0)
    direct = np.exp(xm * xm) * erfc(xm)
    xl = np.where(moderate, 20.0, x)
    # Asymptotic series 1/(x sqrt(pi)) * sum (-1)^k (2k-1)!! / (2x^2)^k.
    inverse = 1.0 / (2.0 * xl * xl)
    term = np.ones_like(xl)
    total = np.ones_like(xl)
    for k in range(1, 12):
        term = -term * (2 * k - 1) * inverse
        total = total + term
    asymptotic = total / (xl * _SQRT_PI)
    return np.where(moderate, direct, asymptotic)


# ---------------------------------------------------------------------------
# Bessel functions of integer order


def _hankel_asymptotic(n: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """J_n(x) and Y_n(x) for large x > 0 from Hankel's asymptotic expansion."""
    mu = 4.0 * n * n
    p = np.ones_like(x)
    q = np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 30):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q = q + (term if (k // 2) % 2 == 0 else -term)
        else:
            p = p + (-term if (k // 2) % 2 else term)
    chi = x - (n / 2.0 + 0.25) * math.pi
    scale = np.sqrt(2.0 / (math.pi * x))
    return scale * (p * np.cos(chi) - q * np.sin(chi)), scale * (p * np.sin(chi) + q * np.cos(chi))


def _asymptotic_region(n: int, x: np.ndarray) -> np.ndarray:
    return x > max(50.0, 25.0 + n * n)


def jn(n: int, x) -> np.ndarray:
    """Bessel function of the first kind J_n(x), integer n."""
    x = np.asarray(x, dtype=np.float64)
    sign = 1.0
    if n < 0:
        n, sign = -n, (-1.0) ** n
    ax = np.abs(x)
    reflect = np.where((x < 0) & (n % 2 == 1), -1.0, 1.0)
    big = _asymptotic_region(n, ax)
    small_x = np.where(big | ~np.isfinite(ax), 0.0, ax)
    # Bessel's integral over a full period: the trapezoid rule converges
    # geometrically once it has more points than x + n.
    points = int(np.max(small_x, initial=0.0)) + n + 64
    tau = np.arange(points) * (2.0 * math.pi / points)
    integrand = np.cos(n * tau - small_x[..., None] * np.sin(tau))
    value = integrand.mean(axis=-1)
    large_j, _ = _hankel_asymptotic(n, np.where(big, ax, 100.0 + n * n))
    value = np.where(big, large_j, value)
    value = np.where(np.isinf(ax), 0.0, value)
    return sign * reflect * value


def _gauss_legendre(a, b, nodes: int, panels: int):
    """Nodes (shape (..., panels*nodes)) and weights of composite Gauss-Legendre on [a, b]."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    a = np.asarray(a, dtype=np.float64)[..., None, None]
    b = np.asarray(b, dtype=np.float64)[..., None, None]
    width = (b - a) / panels
    left = a + width * np.arange(panels)[:, None]
    points = left + width * (t + 1.0) / 2.0
    weights = np.broadcast_to(width / 2.0 * w, points.shape)
    shape = points.shape[:-2] + (panels * nodes,)
    return points.reshape(shape), weights.reshape(shape)


def yn(n: int, x) -> np.ndarray:
    """Bessel function of the second kind Y_n(x), integer n; -inf at 0, NaN for x < 0."""
    x = np.asarray(x, dtype=np.float64)
    sign = 1.0
    if n < 0:
        n, sign = -n, (-1.0) ** n
    big = _asymptotic_region(n, x)
    ok = (x > 0) & np.isfinite(x) & ~big
    xs = np.where(ok, x, 1.0)
    # Y_n(x) = 1/pi int_0^pi sin(x sin t - n t) dt
    #          - 1/pi int_0^inf (e^{nt} + (-1)^n e^{-nt}) e^{-x sinh t} dt
    nodes = 2 * (int(np.max(xs, initial=1.0)) + n) + 48
    t, w = _gauss_legendre(0.0, math.pi, min(nodes, 256), max(1, nodes // 256 + 1))
    first = (np.sin(xs[..., None] * np.sin(t) - n * t) * w).sum(axis=-1)
    end = np.arcsinh((40.0 + 2.0 * n * np.log1p(n + 1.0 / xs)) / xs) + 1.0
    s, v = _gauss_legendre(0.0, end, 32, 16)
    decay = np.exp(n * s - xs[..., None] * np.sinh(s)) + (-1.0) ** n * np.exp(-n * s - xs[..., None] * np.sinh(s))
    second = (decay * v).sum(axis=-1)
    value = (first - second) / math.pi
    _, large_y = _hankel_asymptotic(n, np.where(big, x, 100.0 + n * n))
    value = np.where(big, large_y, value)
    value = np.where(x == 0, -np.inf, value)
    value = np.where((x < 0) | np.isnan(x), np.nan, value)
    value = np.where(np.isposinf(x), 0.0, value)
    return sign * value


def cyl_bessel_i(n: int, x) -> np.ndarray:
    """Modified Bessel function of the first kind I_n(x), n = 0 or 1."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.where(np.isfinite(x), np.abs(x), 0.0)
    # I_n(x) = 1/(2 pi) int_0^{2 pi} e^{x cos t} cos(n t) dt, scaled by e^{-|x|}
    # so the periodic integrand stays finite; trapezoid converges geometrically.
    points = 64 + 8 * int(math.ceil(math.sqrt(float(np.max(ax, initial=0.0)))))
    tau = np.arange(points) * (2.0 * math.pi / points)
    scaled = (np.exp(ax[..., None] * (np.cos(tau) - 1.0)) * np.cos(n * tau)).mean(axis=-1)
    value = scaled * np.exp(ax)
    if n % 2:
        value = np.where(x == 0, 0.0, np.copysign(value, x))
    return np.where(np.isfinite(x), value, np.where(np.isnan(x), np.nan, np.copysign(np.inf, x) if n % 2 else np.inf))
