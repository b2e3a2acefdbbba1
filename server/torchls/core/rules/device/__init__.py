"""Device rules (TL2xx): tensors and models on different devices, moves that do not happen."""

from torchls.core.rules.device.cpu_and_gpu_tensors_mixed import CpuAndGpuTensorsMixed
from torchls.core.rules.device.cpu_input_to_gpu_model import CpuInputToGpuModel
from torchls.core.rules.device.dataloader_over_gpu_tensors import DataloaderOverGpuTensors
from torchls.core.rules.device.hardcoded_cuda_without_check import HardcodedCudaWithoutCheck
from torchls.core.rules.device.layer_added_after_move import LayerAddedAfterMove
from torchls.core.rules.device.load_without_map_location import LoadWithoutMapLocation
from torchls.core.rules.device.new_tensor_in_forward_without_device import NewTensorInForwardWithoutDevice
from torchls.core.rules.device.numpy_on_gpu_tensor import NumpyOnGpuTensor
from torchls.core.rules.device.tensor_attribute_not_buffer import TensorAttributeNotBuffer
from torchls.core.rules.device.tensor_move_discarded import TensorMoveDiscarded

RULES = [
    TensorMoveDiscarded,
    CpuInputToGpuModel,
    NewTensorInForwardWithoutDevice,
    NumpyOnGpuTensor,
    LoadWithoutMapLocation,
    HardcodedCudaWithoutCheck,
    CpuAndGpuTensorsMixed,
    DataloaderOverGpuTensors,
    LayerAddedAfterMove,
    TensorAttributeNotBuffer,
]
