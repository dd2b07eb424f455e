"""Kernels for the optimizer update ops (graphtool/ops/training.py).

The formulas follow TensorFlow's CPU functors (training_ops.cc) operation by operation, each
rounded in the variable's dtype, so that results match TensorFlow's bit for bit where its kernel
is plain arithmetic. One known exception: Eigen evaluates rsqrt (Adagrad, ProximalAdagrad,
Adadelta) with a fast approximate reciprocal square root refined by a Newton step; we take
1 / sqrt, which can differ in the last bit.

Registered for the CPU and the GPU: the update runs on host copies of the variable and its
slots, and the results are stored back on the variable's device (a GPU session of a training
graph had no kernel for them at all; measured on an H200).

Sparse forms apply the same update to the rows named by `indices`, one index after the other as
TensorFlow's loop does: rows named several times are updated once per mention, in order (we
vectorise across the k-th mentions of distinct rows, which commute).
"""
from __future__ import annotations

import inspect

import numpy as np

from ...ops.training import op_inputs
from .libm import float_function
from .registry import CPU, GPU, kernel
from .state import Variable, _ref_to, _resource_variable, _variable_of_ref



def _sign(x):
    return np.sign(x).astype(x.dtype)


def _one(x):
    return x.dtype.type(1)


# Each update takes the slot values and scalars as a dict (`s`) plus the bool attrs and returns
# the slots' new values; names are TensorFlow's input names.

def _gradient_descent(s, attrs):
    return {"var": s["var"] - s["grad"] * s["alpha"]}


def _proximal_gradient_descent(s, attrs):
    lr, l1, l2, var = s["alpha"], s["l1"], s["l2"], s["var"]
    prox = var - s["grad"] * lr
    denominator = _one(var) + l2 * lr
    if l1 > 0:
        return {"var": _sign(prox) * np.maximum(np.abs(prox) - lr * l1, var.dtype.type(0)) / denominator}
    return {"var": prox / denominator}


def _adadelta(s, attrs):
    rho, eps, grad = s["rho"], s["epsilon"], s["grad"]
    accum = s["accum"] * rho + grad * grad * (_one(grad) - rho)
    update = np.sqrt(s["accum_update"] + eps) * (_one(grad) / np.sqrt(accum + eps)) * grad
    return {"accum": accum, "var": s["var"] - update * s["lr"],
            "accum_update": s["accum_update"] * rho + update * update * (_one(grad) - rho)}


def _adagrad(s, attrs):
    grad = s["grad"]
    accum = s["accum"] + grad * grad if attrs["update_slots"] else s["accum"]
    return {"accum": accum, "var": s["var"] - grad * s["lr"] * (_one(grad) / np.sqrt(accum))}


def _adagrad_v2(s, attrs):
    grad = s["grad"]
    accum = s["accum"] + grad * grad if attrs["update_slots"] else s["accum"]
    return {"accum": accum, "var": s["var"] - grad * s["lr"] / (np.sqrt(accum) + s["epsilon"])}


def _proximal_adagrad(s, attrs):
    grad, var, l1, l2 = s["grad"], s["var"], s["l1"], s["l2"]
    accum = s["accum"] + grad * grad
    rate = s["lr"] * (_one(grad) / np.sqrt(accum))
    prox = var - grad * rate
    denominator = _one(var) + l2 * rate
    if l1 > 0:
        new = _sign(prox) * np.maximum(np.abs(prox) - rate * l1, var.dtype.type(0)) / denominator
    else:
        new = prox / denominator
    return {"accum": accum, "var": new}


def _pow(x, exponent):
    """TensorFlow's float pow: std::pow (the C library's powf); Eigen's vectorised pow on whole
    packets of a dense update can differ from it in the last bit."""
    if x.dtype == np.float32:
        return float_function("powf", x, exponent)
    return np.power(x, exponent)


def _ftrl(s, attrs):
    """Ftrl and FtrlV2 (l2_shrinkage), with or without multiply_linear_by_lr."""
    grad, var, accum, lr, l1, l2, power = s["grad"], s["var"], s["accum"], s["lr"], s["l1"], s["l2"], s["lr_power"]
    shrunk = grad + var.dtype.type(2) * s["l2_shrinkage"] * var if "l2_shrinkage" in s else grad
    new_accum = accum + grad * grad
    if power == var.dtype.type(-0.5):
        new_root, old_root = np.sqrt(new_accum), np.sqrt(accum)
    else:
        new_root, old_root = _pow(new_accum, -power), _pow(accum, -power)
    two_l2 = var.dtype.type(2) * l2
    if attrs["multiply_linear_by_lr"]:
        linear = s["linear"] + (shrunk * lr - (new_root - old_root) * var)
        threshold = l1 * lr
        x = threshold * _sign(linear) - linear
        y = new_root + two_l2 * lr
    else:
        linear = s["linear"] + (shrunk - (new_root - old_root) / lr * var)
        threshold = l1
        x = threshold * _sign(linear) - linear
        y = new_root / lr + two_l2
    new_var = np.where(np.abs(linear) > threshold, x / y, var.dtype.type(0))
    return {"linear": linear, "var": new_var, "accum": new_accum}


def _momentum(s, attrs):
    grad, lr, momentum = s["grad"], s["lr"], s["momentum"]
    accum = s["accum"] * momentum + grad
    if attrs["use_nesterov"]:
        return {"accum": accum, "var": s["var"] - (grad * lr + accum * momentum * lr)}
    return {"accum": accum, "var": s["var"] - accum * lr}


def _keras_momentum(s, attrs):
    grad, lr, momentum = s["grad"], s["lr"], s["momentum"]
    accum = s["accum"] * momentum - grad * lr
    step = accum * momentum - grad * lr if attrs["use_nesterov"] else accum
    return {"accum": accum, "var": s["var"] + step}


def _adam(s, attrs):
    grad, beta1, beta2 = s["grad"], s["beta1"], s["beta2"]
    one = _one(grad)
    alpha = s["lr"] * np.sqrt(one - s["beta2_power"]) / (one - s["beta1_power"])
    m = s["m"] + (grad - s["m"]) * (one - beta1)
    v = s["v"] + (grad * grad - s["v"]) * (one - beta2)
    numerator = (grad * (one - beta1) + beta1 * m) * alpha if attrs["use_nesterov"] else m * alpha
    return {"m": m, "v": v, "var": s["var"] - numerator / (np.sqrt(v) + s["epsilon"])}


def _ada_max(s, attrs):
    grad = s["grad"]
    one = _one(grad)
    m = s["m"] + (grad - s["m"]) * (one - s["beta1"])
    v = np.maximum(s["beta2"] * s["v"], np.abs(grad))
    return {"m": m, "v": v, "var": s["var"] - s["lr"] / (one - s["beta1_power"]) * (m / (v + s["epsilon"]))}


def _rms_prop(s, attrs):
    grad = s["grad"]
    ms = s["ms"] + (grad * grad - s["ms"]) * (_one(grad) - s["rho"])
    mom = s["mom"] * s["momentum"] + (grad * s["lr"]) / np.sqrt(ms + s["epsilon"])
    return {"ms": ms, "mom": mom, "var": s["var"] - mom}


def _centered_rms_prop(s, attrs):
    grad = s["grad"]
    one = _one(grad)
    ms = s["ms"] + (grad * grad - s["ms"]) * (one - s["rho"])
    mg = s["mg"] + (grad - s["mg"]) * (one - s["rho"])
    denominator = (ms - mg * mg) + s["epsilon"]
    mom = s["mom"] * s["momentum"] + (grad * s["lr"]) / np.sqrt(denominator)
    return {"ms": ms, "mg": mg, "mom": mom, "var": s["var"] - mom}


def _add_sign(s, attrs):
    grad = s["grad"]
    m = s["m"] * s["beta"] + grad * (_one(grad) - s["beta"])
    sign_gm = _sign(grad) * _sign(m)
    return {"m": m, "var": s["var"] - s["lr"] * (s["alpha"] + s["sign_decay"] * sign_gm) * grad}


def _power_sign(s, attrs):
    grad = s["grad"]
    m = s["m"] * s["beta"] + grad * (_one(grad) - s["beta"])
    sign_gm = _sign(grad) * _sign(m)
    scale = np.exp(s["logbase"] * s["sign_decay"] * sign_gm)
    return {"m": m, "var": s["var"] - s["lr"] * scale * grad}


UPDATES = {
    "GradientDescent": _gradient_descent, "ProximalGradientDescent": _proximal_gradient_descent,
    "Adadelta": _adadelta, "Adagrad": _adagrad, "AdagradV2": _adagrad_v2, "ProximalAdagrad": _proximal_adagrad,
    "Ftrl": _ftrl, "FtrlV2": _ftrl, "Momentum": _momentum, "KerasMomentum": _keras_momentum, "Adam": _adam,
    "AdaMax": _ada_max, "RMSProp": _rms_prop, "CenteredRMSProp": _centered_rms_prop, "AddSign": _add_sign,
    "PowerSign": _power_sign,
}


# TensorFlow's sparse kernels spell some updates differently (row by row, scalars first), which
# rounds differently; these are their forms.

def _sparse_momentum(s, attrs):
    grad, lr, momentum = s["grad"], s["lr"], s["momentum"]
    accum = s["accum"] * momentum + grad
    if attrs["use_nesterov"]:
        return {"accum": accum, "var": s["var"] - (lr * grad + lr * momentum * accum)}
    return {"accum": accum, "var": s["var"] - lr * accum}


def _sparse_rms_prop(s, attrs):
    grad, rho = s["grad"], s["rho"]
    ms = s["ms"] * rho + grad * grad * (_one(grad) - rho)
    mom = s["mom"] * s["momentum"] + (_one(grad) / np.sqrt(ms + s["epsilon"])) * s["lr"] * grad
    return {"ms": ms, "mom": mom, "var": s["var"] - mom}


def _sparse_centered_rms_prop(s, attrs):
    grad, rho = s["grad"], s["rho"]
    ms = s["ms"] * rho + grad * grad * (_one(grad) - rho)
    mg = s["mg"] * rho + grad * (_one(grad) - rho)
    denominator = ms + s["epsilon"] - mg * mg
    mom = s["mom"] * s["momentum"] + (_one(grad) / np.sqrt(denominator)) * s["lr"] * grad
    return {"ms": ms, "mg": mg, "mom": mom, "var": s["var"] - mom}


SPARSE_UPDATES = {**UPDATES, "Momentum": _sparse_momentum, "RMSProp": _sparse_rms_prop,
                  "CenteredRMSProp": _sparse_centered_rms_prop}


# --- the generic kernel -------------------------------------------------------------------------

def _slot_variable(ctx, value, resource: bool) -> Variable:
    """The variable a slot input names: a resource handle, or a ref from a VariableV2."""
    return _resource_variable(ctx, value)[1] if resource else _variable_of_ref(ctx, value)


def _sparse_update(ctx, update, values: dict, slots: list[str], indices: np.ndarray, attrs) -> dict:
    """Apply `update` to the rows named by `indices`, mention by mention (see the module doc)."""
    var = values["var"]
    rows = var.shape[0] if var.ndim else 0
    grad = values["grad"]
    if var.ndim == 0:
        ctx.fail("var must be at least 1 dimensional")
    if indices.ndim != 1:
        ctx.fail("indices must be one-dimensional")
    if grad.shape[:1] != indices.shape or grad.shape[1:] != var.shape[1:]:
        ctx.fail(f"grad must be the same shape as var except the first dimension, and have as many rows as "
                 f"indices: var {list(var.shape)}, grad {list(grad.shape)}, indices {list(indices.shape)}")
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        position = int(np.argmax(bad))
        ctx.fail(f"indices[{position}] = {int(indices[position])} is not in [0, {rows})")
    new = {name: np.array(values[name]) for name in slots}
    # mention[k] = how many earlier entries of indices name the same row
    order = np.argsort(indices, kind="stable")
    sorted_rows = indices[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_rows)) + 1] if indices.size else np.zeros(0, np.int64)
    mention = np.empty(indices.size, np.int64)
    mention[order] = np.arange(indices.size) - np.repeat(starts, np.diff(np.r_[starts, indices.size]))
    for k in range(int(mention.max()) + 1 if indices.size else 0):
        positions = np.flatnonzero(mention == k)
        targets = indices[positions]
        rows_in = {**values, **{name: new[name][targets] for name in slots}, "grad": grad[positions]}
        for name, value in update(rows_in, attrs).items():
            new[name][targets] = value
    return new


def _apply(ctx, inputs, attrs):
    optimizer, names = op_inputs(ctx.op)
    resource = ctx.op.startswith("Resource")
    xp_inputs = {}
    variables = {}
    for name, value in zip(names, inputs):
        if name.startswith("*"):
            variables[name[1:]] = _slot_variable(ctx, value, resource)
        else:
            xp_inputs["grad" if name == "delta" else name] = value
    # one lock at a time, in input order, as TensorFlow's MaybeLockVariableInputMutexesInOrder
    locks = []
    for variable in variables.values():
        if variable.lock not in locks:
            locks.append(variable.lock)
    for lock in locks:
        lock.acquire()
    try:
        values = {}
        for name, variable in variables.items():
            if variable.value is None:
                ctx.fail(f"Attempting to use uninitialized variables: {variable.name}")
            values[name] = np.asarray(variable.value if isinstance(variable.value, np.ndarray)
                                      else variable.value.get())
        dtype = values["var"].dtype
        for name, value in xp_inputs.items():
            host = value if isinstance(value, np.ndarray) else value.get()
            if name == "indices":
                values[name] = np.asarray(host)
                continue
            if name != "grad" and np.ndim(host) != 0:
                ctx.fail(f"{name} is not a scalar: {list(np.shape(host))}")
            values[name] = np.asarray(host, dtype=dtype) if name == "grad" else dtype.type(host)
        for name in variables:
            if values[name].shape != values["var"].shape:
                ctx.fail(f"var and {name} do not have the same shape{list(values['var'].shape)} "
                         f"{list(values[name].shape)}")
        if "indices" in values:
            new = _sparse_update(ctx, SPARSE_UPDATES[optimizer], values, list(variables), values.pop("indices"), attrs)
        else:
            if values["grad"].shape != values["var"].shape:
                ctx.fail(f"var and grad do not have the same shape{list(values['var'].shape)} "
                         f"{list(values['grad'].shape)}")
            new = UPDATES[optimizer](values, attrs)
        for name, value in new.items():
            variables[name].store(ctx.xp, ctx.xp.asarray(np.asarray(value, dtype=dtype)))
    finally:
        for lock in reversed(locks):
            lock.release()
    if resource:
        return ()
    return _ref_to(ctx, variables["var"])


def _kernel_for(op: str):
    """The kernel of one op: _apply with the op's attrs as keyword-only parameters (the kernel
    registry binds a node's attrs by the parameter names)."""
    from ...ops import registry as op_registry

    attr_names = [attr for attr in op_registry.get(op).attrs]

    def run(ctx, *inputs, **attrs):
        return _apply(ctx, inputs, attrs)
    parameters = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_ONLY),
                  inspect.Parameter("inputs", inspect.Parameter.VAR_POSITIONAL)]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in attr_names]
    run.__signature__ = inspect.Signature(parameters)   # type: ignore[attr-defined]  # functions take attributes; inspect.signature() reads this one
    run.__name__ = op
    return run


def _register_all():
    from ...ops import registry as op_registry

    for op in sorted(op_registry.all_ops()):
        if op_inputs(op) is not None:
            kernel(op, devices=(CPU, GPU))(_kernel_for(op))


_register_all()
