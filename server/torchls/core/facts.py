"""Small, explicit facts about torch's API that static analysis relies on.

They are written down here instead of being read from torch, because the server never imports torch. Each list
names only what is certain: a function listed here always returns a single tensor, whatever its arguments.
"""

from __future__ import annotations

TENSOR = "torch.Tensor"

# torch.* functions that always return one Tensor.
TENSOR_FUNCTIONS = frozenset(
    "torch." + name
    for name in """
    tensor as_tensor from_numpy zeros ones empty full eye arange linspace logspace rand randn randint randperm
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    cat concat concatenate stack hstack vstack dstack matmul mm bmm einsum outer where masked_select gather
    index_select take flatten reshape squeeze unsqueeze permute transpose t clone abs exp log log1p sqrt rsqrt
    pow sigmoid tanh relu softmax log_softmax clamp clip sum mean prod std var norm argmax argmin cumsum cumprod
    tril triu diag flip roll repeat_interleave bucketize bincount multinomial bernoulli normal isnan isinf isfinite
    logical_and logical_or logical_not eq ne gt lt ge le maximum minimum add sub mul div matrix_power
    """.split()
)

# torch.* functions that make a new tensor (the interpreter models their result from their arguments).
CREATION_FUNCTIONS = frozenset(
    "torch." + name
    for name in """
    zeros ones empty full eye arange linspace logspace rand randn randint randperm tensor as_tensor from_numpy
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    """.split()
)

# The creation functions whose tensor lands on the default device (the CPU) unless they are given ``device=``:
# not the ``*_like`` ones, which follow their argument's device, nor ``from_numpy``/``as_tensor``, which follow
# their data.
DEFAULT_DEVICE_CREATION_FUNCTIONS = CREATION_FUNCTIONS - {
    name for name in CREATION_FUNCTIONS if name.endswith("_like") or name in ("torch.from_numpy", "torch.as_tensor")
}

# torch.nn.functional.* functions that always return one Tensor.
FUNCTIONAL_TENSOR_FUNCTIONS = frozenset(
    "torch.nn.functional." + name
    for name in """
    relu relu6 leaky_relu gelu silu elu selu mish softplus hardswish hardsigmoid sigmoid tanh softmax
    log_softmax normalize dropout dropout1d dropout2d dropout3d linear conv1d conv2d conv3d conv_transpose1d
    conv_transpose2d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d
    adaptive_avg_pool3d interpolate pad one_hot embedding layer_norm group_norm batch_norm instance_norm
    cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy
    binary_cross_entropy_with_logits kl_div cosine_similarity pairwise_distance grid_sample
    scaled_dot_product_attention unfold fold pixel_shuffle
    """.split()
)

# Tensor methods that always return one Tensor.
TENSOR_RETURNING_METHODS = frozenset(
    """
    view view_as reshape reshape_as permute transpose t contiguous squeeze unsqueeze flatten unflatten expand
    expand_as repeat to cuda cpu float double half bfloat16 long int bool byte type_as detach clone sum mean
    prod std var norm abs exp log sqrt pow sigmoid tanh relu softmax log_softmax matmul mm bmm add sub mul div
    clamp clamp_ argmax argmin masked_fill masked_fill_ flip roll gather scatter index_select narrow cumsum
    mul_ add_ sub_ div_ zero_ fill_ normal_ uniform_ requires_grad_ detach_ tril triu round floor ceil
    logical_not eq ne gt lt ge le any all neg reciprocal square unfold new_zeros new_ones
    new_full new_empty new_tensor
    """.split()
)

# Calls whose result, unpacked or iterated, always yields tensors. Most return a tuple of tensors (``chunk``,
# ``split``, ``meshgrid``, the ``(values, indices)`` pairs of ``max(x, dim)``, ``sort``, ``topk`` ...); a few
# return one tensor for some arguments (``max(x)``, ``median(x)``, ``max(a, b)``), whose rows are tensors too.
# Each was run against torch 2.13 with several argument forms: every result is a tensor, or a tuple (plain or a
# ``torch.return_types`` named tuple) of tensors. None returns a list, so a name bound to one cannot be changed
# by ``append``. ``torch.Tensor`` has no ``var_mean``/``std_mean`` method.
_TENSOR_SEQUENCE_NAMES = """
    chunk split unbind tensor_split split_with_sizes hsplit vsplit dsplit max min median nanmedian mode kthvalue
    sort topk aminmax cummax cummin histogram frexp
    """.split()
TENSOR_SEQUENCE_FUNCTIONS = frozenset(
    [f"torch.{name}" for name in [*_TENSOR_SEQUENCE_NAMES, "meshgrid", "broadcast_tensors", "var_mean", "std_mean"]]
    + [f"torch.linalg.{name}" for name in ("eigh", "eig", "qr", "svd", "slogdet")]
)
TENSOR_SEQUENCE_METHODS = frozenset(_TENSOR_SEQUENCE_NAMES)

# Tensor attributes that are themselves tensors.
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Tensor attributes that hold an instance of another torch class (``x.device.type``, ``x.dtype.is_floating_point``).
TENSOR_ATTRIBUTE_CLASSES = {"device": "torch.device", "dtype": "torch.dtype", "shape": "torch.Size"}

# nn.Module classes whose call always returns one Tensor.
TENSOR_RETURNING_MODULES = frozenset(
    "torch.nn." + name
    for name in """
    Linear Bilinear Identity Flatten Unflatten Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d
    ConvTranspose3d BatchNorm1d BatchNorm2d BatchNorm3d LayerNorm GroupNorm InstanceNorm1d InstanceNorm2d
    RMSNorm Dropout Dropout1d Dropout2d Dropout3d ReLU ReLU6 LeakyReLU GELU SiLU ELU SELU Mish Softplus
    Hardswish Sigmoid Tanh Softmax LogSoftmax Embedding AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
    AdaptiveAvgPool2d AdaptiveAvgPool3d Upsample PixelShuffle ZeroPad2d ConstantPad2d GRUCell RNNCell
    TransformerEncoder TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer Transformer
    """.split()
)

# Layers whose call returns a tuple, and what each position holds: a tensor, or a tuple of them. ``LSTM`` returns
# ``(output, (h_n, c_n))``; ``MultiheadAttention`` ``(output, weights)``, the weights None with
# ``need_weights=False`` (where they are used at all, they are a tensor). Checked against the installed torch by
# tests/unit/test_facts_against_torch.py.
MODULE_CALL_PARTS: dict[str, tuple] = {
    "torch.nn.LSTM": (TENSOR, (TENSOR, TENSOR)),
    "torch.nn.GRU": (TENSOR, TENSOR),
    "torch.nn.RNN": (TENSOR, TENSOR),
    "torch.nn.LSTMCell": (TENSOR, TENSOR),
    "torch.nn.MultiheadAttention": (TENSOR, TENSOR),
}

# nn.Module methods that return the module itself (``model = Net().to(device)`` is still a ``Net``).
MODULE_SELF_METHODS = frozenset(
    "to cuda cpu xpu mtia ipu train eval float double half bfloat16 requires_grad_ apply type share_memory "
    "to_empty".split()
)

# Grad mode. Under ``torch.no_grad()`` an operation makes a tensor with no graph (``requires_grad=False``), except
# these torch callables, which may give one that requires grad anyway, and the tensor methods that may hand back
# the tensor itself (``p.to(p.device)``, ``p.float()`` on a float, in-place methods): what they return is what the
# tensor was.
MAY_REQUIRE_GRAD_PREFIXES = (
    "torch.autograd.",
    "torch.func.",
    "torch.nn.Parameter",
    "torch.nn.parameter.",
    "torch.enable_grad",
)
TENSOR_SELF_METHODS = frozenset(
    "to cuda cpu xpu float double half bfloat16 long int short bool byte char type type_as contiguous "
    "requires_grad_ retain_grad pin_memory share_memory_ as_subclass".split()
)

# nn.Module methods that return an iterator, and what each element is: a class, or a tuple whose positions hold a
# class or something that is not a torch value (None: the names of ``named_parameters``).
MODULE = "torch.nn.Module"
MODULE_ITERATORS: dict[str, str | tuple[str | None, ...]] = {
    "parameters": "torch.nn.Parameter",
    "named_parameters": (None, "torch.nn.Parameter"),
    "buffers": TENSOR,
    "named_buffers": (None, TENSOR),
    "children": MODULE,
    "modules": MODULE,
    "named_children": (None, MODULE),
    "named_modules": (None, MODULE),
}

# Containers of layers: calling a Sequential runs its layers in turn; iterating any of them yields its layers.
SEQUENTIAL = "torch.nn.Sequential"
LAYER_CONTAINERS = frozenset({SEQUENTIAL, "torch.nn.ModuleList"})
MODULE_DICT = "torch.nn.ModuleDict"

# torch.utils.data: what iterating a loader or a dataset yields is read from the dataset the code builds.
DATA_LOADER = "torch.utils.data.DataLoader"
TENSOR_DATASET = "torch.utils.data.TensorDataset"
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})

# Parameters and buffers that torch layers register (``bn.weight``, ``conv.bias``, ``bn.running_var``): each
# holds a tensor, or None when the layer was built without it (``bias=False``, ``affine=False``), which for
# hover and completion is still that tensor wherever its members are used. Checked against the installed torch
# by tests/unit/test_facts_against_torch.py.
_WEIGHT_AND_BIAS = ("weight", "bias")
_RUNNING_STATS = (*_WEIGHT_AND_BIAS, "running_mean", "running_var", "num_batches_tracked")
_CELL_WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
MODULE_TENSOR_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    **{
        f"torch.nn.{name}": _WEIGHT_AND_BIAS
        for name in """
        Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LayerNorm GroupNorm
        """.split()
    },
    **{
        f"torch.nn.{name}": _RUNNING_STATS
        for name in """
        BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d
        """.split()
    },
    "torch.nn.RMSNorm": ("weight",),
    "torch.nn.Embedding": ("weight",),
    "torch.nn.EmbeddingBag": ("weight",),
    "torch.nn.PReLU": ("weight",),
    "torch.nn.RNNCell": _CELL_WEIGHTS,
    "torch.nn.LSTMCell": _CELL_WEIGHTS,
    "torch.nn.GRUCell": _CELL_WEIGHTS,
}

# Tensor methods that convert the dtype and return a new tensor.
DTYPE_METHODS = {
    "float": "torch.float32",
    "double": "torch.float64",
    "half": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "long": "torch.int64",
    "int": "torch.int32",
    "short": "torch.int16",
    "bool": "torch.bool",
    "byte": "torch.uint8",
}

# NumPy dtypes (``np.int32``, ``"int32"``, ``float``) and the torch dtype ``torch.from_numpy`` / ``torch.tensor``
# give an array of that dtype. Python's ``int``/``float``/``bool`` as a dtype mean int64, float64 and bool.
NUMPY_DTYPES = {
    **{
        f"numpy.{name}": f"torch.{torch_name}"
        for name, torch_name in (
            ("float64", "float64"),
            ("double", "float64"),
            ("float32", "float32"),
            ("single", "float32"),
            ("float16", "float16"),
            ("half", "float16"),
            ("int64", "int64"),
            ("int32", "int32"),
            ("int16", "int16"),
            ("int8", "int8"),
            ("uint8", "uint8"),
            ("bool_", "bool"),
            ("longlong", "int64"),
        )
    },
    **{name: f"torch.{name}" for name in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8")},
    "builtins.int": "torch.int64",
    "builtins.float": "torch.float64",
    "builtins.bool": "torch.bool",
}
# The dtype of an array NumPy makes without being told one: of floats (``np.zeros``, ``rng.normal``), of
# Python ints (``rng.integers``, ``np.digitize``), of Python bools.
NUMPY_FLOAT = "torch.float64"
NUMPY_INT = "torch.int64"
# numpy.random functions and Generator methods, by the kind of numbers they draw, with the position of their
# ``size`` parameter (``rand``/``randn`` take the dims themselves).
NUMPY_RANDOM_FLOATS = {
    "random": 0,
    "random_sample": 0,
    "standard_normal": 0,
    "exponential": 1,
    "normal": 2,
    "uniform": 2,
    "lognormal": 2,
    "beta": 2,
    "gamma": 2,
    "rand": None,
    "randn": None,
}
NUMPY_RANDOM_INTS = {"integers": 2, "randint": 2}

# Classes whose instances behave like another class for attribute lookup.
ATTRIBUTE_BASES = {"torch.nn.Parameter": TENSOR, "torch.nn.parameter.Parameter": TENSOR}

# Lower-case names in torch that are classes: calling them makes an instance (``torch.finfo(dtype).min`` is
# ``torch.finfo.min``), and ``torch.device.type`` is a member, not a function of a module ``torch.device``.
LOWERCASE_CLASSES = frozenset(
    "torch.device torch.dtype torch.finfo torch.iinfo torch.layout torch.memory_format torch.no_grad "
    "torch.enable_grad torch.inference_mode torch.set_grad_enabled torch.autocast".split()
)


def is_loss_module(qualname: str) -> bool:
    """True for ``torch.nn.<Something>Loss``: calling such a module returns the loss tensor."""
    return qualname.startswith("torch.nn.") and qualname.endswith("Loss")


_NN_CLASSES_NOT_MODULES = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.UninitializedParameter",
        "torch.nn.Buffer",
        "torch.nn.UninitializedBuffer",
        "torch.nn.LinearCrossEntropyOptions",
    }
)


def is_module_class(qualname: str) -> bool:
    """True for the public layer classes of ``torch.nn`` (``torch.nn.Linear``): all are ``nn.Module``s."""
    head, _, last = qualname.rpartition(".")
    return head == "torch.nn" and last[:1].isupper() and qualname not in _NN_CLASSES_NOT_MODULES


# Functions and tensor methods that always return a ``torch.return_types`` named tuple of that name (checked with
# torch 2.13: ``x.topk(2).indices``). ``max``/``min``/``median`` return one only with a ``dim``, so are not here.
NAMED_TUPLE_RESULTS = frozenset("topk sort kthvalue mode cummax cummin aminmax frexp histogram geqrf svd".split())

# torch functions that return an instance of another torch class than a tensor.
OTHER_CLASS_FUNCTIONS = {
    "torch.get_default_dtype": "torch.dtype",
    "torch.promote_types": "torch.dtype",
    "torch.result_type": "torch.dtype",
    "torch.get_default_device": "torch.device",
}


def call_result(callee: str) -> str | None:
    """The class of the value returned by calling the torch name ``callee``, when it is certain."""
    if callee in TENSOR_FUNCTIONS or callee in FUNCTIONAL_TENSOR_FUNCTIONS:
        return TENSOR
    last = callee.rsplit(".", 1)[-1]
    if callee in OTHER_CLASS_FUNCTIONS:
        return OTHER_CLASS_FUNCTIONS[callee]
    if callee.startswith("torch.") and callee.count(".") == 1 and last in NAMED_TUPLE_RESULTS:
        return f"torch.return_types.{last}"
    if callee.startswith("torch.") and (last[:1].isupper() or callee in LOWERCASE_CLASSES):
        return callee  # calling a class makes an instance of it
    return None


def instance_call_result(class_qualname: str) -> str | None:
    """The class of the value returned by calling an *instance* of ``class_qualname``."""
    if class_qualname in TENSOR_RETURNING_MODULES or is_loss_module(class_qualname):
        return TENSOR
    return None


def method_result(receiver_class: str, method: str, has_arguments: bool = True) -> str | None:
    """The class of the value returned by ``receiver.method(...)`` (``has_arguments``: the call passes any)."""
    if ATTRIBUTE_BASES.get(receiver_class, receiver_class) == TENSOR:
        if method in TENSOR_RETURNING_METHODS or (method == "type" and has_arguments):  # ``x.type()`` is a str
            return TENSOR
        return f"torch.return_types.{method}" if method in NAMED_TUPLE_RESULTS else None
    if method in MODULE_SELF_METHODS and (receiver_class == MODULE or is_module_class(receiver_class)):
        return receiver_class
    return None


def attribute_result(receiver_class: str, attribute: str) -> str | None:
    """The class of ``receiver.attribute`` when it is certain."""
    if ATTRIBUTE_BASES.get(receiver_class, receiver_class) == TENSOR:
        return TENSOR if attribute in TENSOR_ATTRIBUTES else TENSOR_ATTRIBUTE_CLASSES.get(attribute)
    return None


def module_attribute_result(layer_class: str, attribute: str) -> str | None:
    """``torch.nn.Parameter`` or ``torch.Tensor`` for a parameter or buffer a torch layer registers (see
    :data:`MODULE_TENSOR_ATTRIBUTES`; it may also be None, which only hover and completion may overlook)."""
    if attribute not in MODULE_TENSOR_ATTRIBUTES.get(layer_class, ()):
        return None
    return TENSOR if attribute.startswith(("running_", "num_batches")) else "torch.nn.Parameter"


def call_yields_tensors(callee: str) -> bool:
    """True when unpacking or iterating the result of calling the torch name ``callee`` always yields tensors."""
    return callee in TENSOR_SEQUENCE_FUNCTIONS


def method_yields_tensors(receiver_class: str, method: str) -> bool:
    """True when unpacking or iterating the result of ``receiver.method(...)`` always yields tensors."""
    return ATTRIBUTE_BASES.get(receiver_class, receiver_class) == TENSOR and method in TENSOR_SEQUENCE_METHODS
