//! Burn's fusion IR for `CpuFlex`: tensor handles (`BackendIr`) and the fusion backend.

use super::{CpuFlex, CpuFusionRuntime};
use burn::backend::Flex;
use burn::backend::flex::{FlexQTensor, FlexTensor};
use burn::backend::ir::{BackendIr, HandleKind, TensorHandle};
use burn::tensor::DType;
use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn_fusion::FusionBackend;

impl BackendIr for CpuFlex {
    type Handle = HandleKind<Self>;

    fn float_tensor(handle: TensorHandle<Self::Handle>) -> FlexTensor {
        match handle.handle {
            HandleKind::Float(t) => t,
            other => panic!("expected a float handle, got {}", other.name()),
        }
    }

    fn int_tensor(handle: TensorHandle<Self::Handle>) -> FlexTensor {
        match handle.handle {
            HandleKind::Int(t) => t,
            other => panic!("expected an int handle, got {}", other.name()),
        }
    }

    fn bool_tensor(handle: TensorHandle<Self::Handle>) -> FlexTensor {
        match handle.handle {
            HandleKind::Bool(t) => t,
            other => panic!("expected a bool handle, got {}", other.name()),
        }
    }

    fn quantized_tensor(handle: TensorHandle<Self::Handle>) -> FlexQTensor {
        match handle.handle {
            HandleKind::Quantized(t) => t,
            other => panic!("expected a quantized handle, got {}", other.name()),
        }
    }

    fn float_tensor_handle(tensor: FlexTensor) -> Self::Handle {
        HandleKind::Float(tensor)
    }

    fn int_tensor_handle(tensor: FlexTensor) -> Self::Handle {
        HandleKind::Int(tensor)
    }

    fn bool_tensor_handle(tensor: FlexTensor) -> Self::Handle {
        HandleKind::Bool(tensor)
    }

    fn quantized_tensor_handle(tensor: FlexQTensor) -> Self::Handle {
        HandleKind::Quantized(tensor)
    }
}

impl FusionBackend for CpuFlex {
    type FusionRuntime = CpuFusionRuntime;
    type FullPrecisionBackend = CpuFlex;

    fn cast_float(tensor: FloatTensor<Self>, dtype: DType) -> Self::Handle {
        HandleKind::Float(Flex::float_cast(tensor, dtype.into()))
    }
}
