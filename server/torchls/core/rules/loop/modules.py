"""What the training-loop rules can prove about models: which layers behave differently in train and eval mode,
which classes in the file are ``nn.Module`` subclasses, and which layers hold parameters."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torchls.core.rules.base import Context
from torchls.core.values import InstanceValue, ModuleValue

if TYPE_CHECKING:
    from torchls.core.interpreter import ClassInfo

DROPOUTS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
BATCH_NORMS = frozenset(
    {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d"}
)
# Layers whose dropout defaults to 0.1: (the position of ``dropout`` among the positional arguments).
TRANSFORMER_LAYERS = {"TransformerEncoderLayer": 3, "TransformerDecoderLayer": 3}

# Layers that own parameters (or buffers) with their default arguments: an unregistered one is never trained.
LAYERS_WITH_STATE = frozenset(
    """Linear Bilinear LazyLinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d
    LazyConv2d LazyConv3d BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LayerNorm GroupNorm RMSNorm Embedding
    EmbeddingBag LSTM GRU RNN LSTMCell GRUCell RNNCell MultiheadAttention Transformer TransformerEncoderLayer
    TransformerDecoderLayer TransformerEncoder TransformerDecoder PReLU""".split()
)

# torchvision classification and segmentation models: each has BatchNorm or Dropout (or stochastic depth).
TORCHVISION_MODELS = frozenset(
    """resnet18 resnet34 resnet50 resnet101 resnet152 resnext50_32x4d resnext101_32x8d resnext101_64x4d
    wide_resnet50_2 wide_resnet101_2 vgg11 vgg13 vgg16 vgg19 vgg11_bn vgg13_bn vgg16_bn vgg19_bn alexnet
    densenet121 densenet161 densenet169 densenet201 mobilenet_v2 mobilenet_v3_large mobilenet_v3_small
    efficientnet_b0 efficientnet_b1 efficientnet_b2 efficientnet_b3 efficientnet_b4 efficientnet_b5 efficientnet_b6
    efficientnet_b7 efficientnet_v2_s efficientnet_v2_m efficientnet_v2_l squeezenet1_0 squeezenet1_1 googlenet
    inception_v3 shufflenet_v2_x0_5 shufflenet_v2_x1_0 shufflenet_v2_x1_5 shufflenet_v2_x2_0 mnasnet0_5 mnasnet0_75
    mnasnet1_0 mnasnet1_3 convnext_tiny convnext_small convnext_base convnext_large deeplabv3_resnet50
    deeplabv3_resnet101 deeplabv3_mobilenet_v3_large fcn_resnet50 fcn_resnet101 lraspp_mobilenet_v3_large""".split()
)

LIGHTNING_BASES = frozenset(
    {"lightning.LightningModule", "lightning.pytorch.LightningModule", "pytorch_lightning.LightningModule"}
)


def short(module: ModuleValue) -> str:
    return module.qualname.rsplit(".", 1)[-1]


def literal_argument(call: ast.AST | None, index: int, name: str) -> tuple[bool, Any]:
    """(given, value) for a constructor argument: value is the literal, or ``...`` when it is not a literal."""
    if not isinstance(call, ast.Call):
        return True, ...
    for keyword in call.keywords:
        if keyword.arg == name:
            return True, _literal(keyword.value)
        if keyword.arg is None:
            return True, ...
    positional = call.args
    if any(isinstance(a, ast.Starred) for a in positional[: index + 1]):
        return True, ...
    if index < len(positional):
        return True, _literal(positional[index])
    return False, None


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def mode_dependent_layers(module: Any, ctx: Context, seen: frozenset[str] = frozenset()) -> list[ModuleValue]:
    """The layers of ``module`` that provably behave differently in train and eval mode (empty: not proven)."""
    if not isinstance(module, ModuleValue):
        return []
    if module.user_class is not None:
        return _user_class_layers(module.user_class, ctx, seen, module.args)
    if not module.qualname.startswith("torch.nn."):
        return []
    name = short(module)
    call = module.origin.node if module.origin is not None else None
    if name in DROPOUTS:
        given, p = literal_argument(call, 0, "p")
        if p is ... and isinstance(module.arg("p"), int | float):
            p = module.arg("p")  # nn.Dropout(p) with p the interpreter worked out (a constructor argument)
        return [module] if not given or _positive(p) else []
    if name in BATCH_NORMS:
        given, track = literal_argument(call, 4, "track_running_stats")
        return [module] if not given or track is True else []
    if name in TRANSFORMER_LAYERS:
        given, p = literal_argument(call, TRANSFORMER_LAYERS[name], "dropout")
        return [module] if not given or _positive(p) else []
    if name == "Sequential":
        found: list[ModuleValue] = []
        for child in module.children:
            found.extend(mode_dependent_layers(child, ctx, seen))
        return found
    return []


def classes(ctx: Context) -> dict[str, ClassInfo]:
    return ctx.classes


def _user_class_layers(name: str, ctx: Context, seen: frozenset[str], arguments: tuple = ()) -> list[ModuleValue]:
    if name in seen:
        return []
    info = classes(ctx).get(name)
    if info is None or not is_module_class(info, ctx):
        return []
    seen = seen | {name}
    family = info.chain()
    methods = [m for k in family for m in k.node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(m.name in ("train", "eval") for m in methods) or any(_calls_eval(m) for m in methods):
        return []  # a class that manages its own mode
    used = _self_attributes_read(methods)
    found: list[ModuleValue] = []
    built = info.instance_attributes(arguments)  # this instance's own layers, sized by its arguments
    unstable = {a for klass in family for a in klass.unstable}
    tables = [built] if built is not None else [klass.attributes for klass in family]
    for table in tables:
        for attribute, value in table.items():
            if attribute in used and attribute not in unstable:
                found.extend(mode_dependent_layers(value, ctx, seen))
    return found


def _calls_eval(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "eval" and not node.args:
                return True
            if node.func.attr == "train" and node.args:
                return True
    return False


def _self_attributes_read(methods: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> set[str]:
    """Attributes read as ``self.x`` outside ``__init__`` (layers that the model really uses)."""
    found = set()
    for method in methods:
        if method.name == "__init__":
            continue
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                found.add(node.attr)
    return found


def is_module_class(info: ClassInfo, ctx: Context) -> bool:
    """An ``nn.Module`` subclass (directly, through a class of this file, or a LightningModule)."""
    if info.is_module:
        return True
    for klass in info.chain():
        for base in klass.node.bases:
            if ctx.qualify(base) in LIGHTNING_BASES:
                return True
    return False


def torchvision_builder(call: ast.expr, ctx: Context) -> str | None:
    """``resnet18`` for ``torchvision.models.resnet18(...)`` (any import spelling), else None."""
    if not isinstance(call, ast.Call):
        return None
    qualname = ctx.qualify(call.func) or ""
    if not qualname.startswith("torchvision.models."):
        return None
    name = qualname.rsplit(".", 1)[-1]
    return name if name in TORCHVISION_MODELS else None


def scaled_backward(call: ast.Call, ctx: Context) -> ast.expr | None:
    """The scaler of ``scaler.scale(loss).backward()``, when it is (or may well be) an enabled GradScaler."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Call)):
        return None
    scale = func.value.func
    if not (isinstance(scale, ast.Attribute) and scale.attr == "scale" and len(func.value.args) == 1):
        return None
    scaler = scale.value
    if not isinstance(scaler, ast.Name | ast.Attribute):
        return None
    value = ctx.value(scaler)
    if value is None:
        return scaler
    if not (isinstance(value, InstanceValue) and value.qualname.endswith("GradScaler")):
        return None
    origin = value.origin.node if value.origin is not None else None
    given, enabled = literal_argument(origin, 99, "enabled")  # passed by keyword
    return None if given and enabled is False else scaler
