"""Tables of torch facts the interpreter reads: which functions create tensors, keep their input's shape,
compute a loss, leave a softmax/sigmoid behind; the constructor parameters of the layers whose arguments rules read.

They stay next to the interpreter (not in :mod:`torchls.core.facts`) because only it reads them.
"""

from __future__ import annotations

DTYPE_NAMES = frozenset(
    "torch." + n
    for n in "float32 float float64 double float16 half bfloat16 int64 long int32 int int16 short int8 uint8 bool "
    "complex64 complex128".split()
)

# Constructor parameters of the layers whose arguments rules read, in positional order.
LAYER_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features", "bias"),
    "LazyLinear": ("out_features", "bias"),
    "Bilinear": ("in1_features", "in2_features", "out_features", "bias"),
    "Conv1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv3d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "ConvTranspose1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"),
    "ConvTranspose2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"),
    "BatchNorm1d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "BatchNorm2d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "BatchNorm3d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "InstanceNorm1d": ("num_features",),
    "InstanceNorm2d": ("num_features",),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode"),
    "LSTM": ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"),
    "GRU": ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"),
    "RNN": ("input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout"),
    "MultiheadAttention": (
        "embed_dim",
        "num_heads",
        "dropout",
        "bias",
        "add_bias_kv",
        "add_zero_attn",
        "kdim",
        "vdim",
        "batch_first",
    ),
    "MaxPool1d": ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"),
    "MaxPool2d": ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"),
    "AvgPool1d": ("kernel_size", "stride", "padding", "ceil_mode"),
    "AvgPool2d": ("kernel_size", "stride", "padding", "ceil_mode"),
    "AdaptiveAvgPool1d": ("output_size",),
    "AdaptiveAvgPool2d": ("output_size",),
    "AdaptiveMaxPool2d": ("output_size",),
    "Flatten": ("start_dim", "end_dim"),
    "Softmax": ("dim",),
    "LogSoftmax": ("dim",),
    "Dropout": ("p", "inplace"),
    "Dropout2d": ("p", "inplace"),
    "CrossEntropyLoss": ("weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"),
    "NLLLoss": ("weight", "size_average", "ignore_index", "reduce", "reduction"),
    "BCELoss": ("weight", "size_average", "reduce", "reduction"),
    "BCEWithLogitsLoss": ("weight", "size_average", "reduce", "reduction", "pos_weight"),
    "MSELoss": ("size_average", "reduce", "reduction"),
    "L1Loss": ("size_average", "reduce", "reduction"),
    "SmoothL1Loss": ("size_average", "reduce", "reduction", "beta"),
    "HuberLoss": ("reduction", "delta"),
    "KLDivLoss": ("size_average", "reduce", "reduction", "log_target"),
}

# Elementwise maths whose result is floating even for an integer input (torch.sqrt(int tensor) is float32).
FLOATING_ELEMENTWISE = frozenset(
    "exp expm1 log log1p log2 log10 sqrt rsqrt sin cos tan sinh cosh asin acos atan erf erfc reciprocal".split()
)
SAME_SHAPE_FUNCTIONS = (
    frozenset(
        "torch.nn.functional." + n
        for n in "relu relu6 leaky_relu gelu silu elu selu mish softplus hardswish hardsigmoid tanh dropout "
        "dropout1d dropout2d normalize layer_norm group_norm batch_norm".split()
    )
    | frozenset("torch." + n for n in "relu tanh abs neg square sign clamp clip triu tril flip".split())
    | frozenset("torch." + n for n in FLOATING_ELEMENTWISE)
)
SAME_SHAPE_METHODS = (
    frozenset(
        "relu tanh abs neg square sign clamp clip clamp_ clip_ abs_ relu_ add_ sub_ mul_ div_ pow_ "
        "zero_ fill_ normal_ uniform_ masked_fill masked_fill_ neg_ exp_ sqrt_ tanh_ sigmoid_ copy_ round floor ceil "
        "detach_ contiguous_ float_ nan_to_num triu tril flip pow index_add index_add_ index_fill index_fill_ "
        "index_copy index_copy_ scatter scatter_ scatter_add scatter_add_ masked_scatter masked_scatter_".split()
    )
    | FLOATING_ELEMENTWISE
)
# Running reductions along a dim (``x.cumsum(dim=0)``): the input's shape; integer and bool inputs give int64
# (cumsum, cumprod), and a ``dtype=`` keyword gives that dtype.
CUMULATIVE = frozenset("cumsum cumprod logcumsumexp".split())
INPLACE_METHODS = frozenset(
    "add_ sub_ mul_ div_ pow_ zero_ fill_ normal_ uniform_ masked_fill_ clamp_ clip_ abs_ relu_ neg_ exp_ sqrt_ "
    "tanh_ sigmoid_ copy_ addcmul_ addcdiv_ mul_ index_fill_ scatter_ scatter_add_ exponential_ random_ "
    "bernoulli_".split()
)
REDUCTIONS = frozenset("sum mean prod std var amax amin nansum nanmean logsumexp norm".split())
ARG_REDUCTIONS = frozenset({"argmax", "argmin"})
# Tensor methods that take a dim, with its position among the arguments after the tensor and its keyword; the
# result's own modelling lives elsewhere (or nowhere): this table only says where a dim out of range can be read.
DIM_ARGUMENTS: dict[str, tuple[int, str]] = {
    **dict.fromkeys(
        "cumsum cumprod cummax cummin logcumsumexp sort argsort unbind any all narrow select gather index_select "
        "median nanmedian mode count_nonzero unflatten".split(),
        (0, "dim"),
    ),
    **dict.fromkeys("topk kthvalue chunk split tensor_split repeat_interleave".split(), (1, "dim")),
    "flip": (0, "dims"),
    "roll": (1, "dims"),
}
# The same for functions of torch.nn.functional (position counted from the first tensor argument).
FUNCTIONAL_DIM_ARGUMENTS: dict[str, tuple[int, str]] = {
    "torch.nn.functional.normalize": (2, "dim"),
    "torch.nn.functional.cosine_similarity": (2, "dim"),
    "torch.nn.functional.glu": (1, "dim"),
    "torch.nn.functional.softmin": (1, "dim"),
}
LOSS_FUNCTIONS = frozenset(
    "torch.nn.functional." + n
    for n in "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
    "binary_cross_entropy_with_logits kl_div cosine_embedding_loss margin_ranking_loss".split()
)
PROVENANCE_FUNCTIONS = frozenset(
    "torch." + n
    for n in "softmax log_softmax sigmoid nn.functional.softmax nn.functional.log_softmax nn.functional.sigmoid "
    "special.softmax special.log_softmax special.expit".split()
)
PROVENANCE_METHODS = frozenset({"softmax", "log_softmax", "sigmoid"})
# nn.Module has float()/double()/half()/bfloat16() too: only long() says "this is a tensor" by itself.
TENSOR_ONLY_CONVERSIONS = frozenset({"long"})
SHAPE_METHODS = frozenset(
    "view reshape permute transpose squeeze unsqueeze flatten expand repeat size sum mean amax amin argmax argmin "
    "max min softmax log_softmax".split()
)
TRACKED_CLASSES = (
    "torch.optim.",
    "torch.utils.data.DataLoader",
    "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.utils.data.TensorDataset",
)
