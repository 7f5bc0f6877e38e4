//! `float_zeros` and `float_empty`: a zeroed buffer of the dtype's element type, allocated
//! once. Flex's `FlexTensor::empty` zeroes a `Vec<u8>` and then copies it into an aligned
//! allocation (its alignment is that of `u8`), which doubled the cost of every zero tensor —
//! autodiff's gradient of a slice starts from one.

use burn::backend::flex::{FlexDevice, FlexTensor};
use burn::tensor::{DType, FloatDType, Shape};

/// Zeros of `shape` and `dtype`.
pub fn float_zeros(shape: Shape, _device: &FlexDevice, dtype: FloatDType) -> FlexTensor {
    zeros(shape, dtype.into())
}

/// A tensor of `shape` and `dtype` whose content does not matter: zeros, as Flex's.
pub fn float_empty(shape: Shape, _device: &FlexDevice, dtype: FloatDType) -> FlexTensor {
    zeros(shape, dtype.into())
}

/// Zeros of any dtype, as elements of its width (every dtype's zero is all bits zero).
fn zeros(shape: Shape, dtype: DType) -> FlexTensor {
    match dtype.size() {
        8 => FlexTensor::filled_typed(shape, dtype, 0u64),
        4 => FlexTensor::filled_typed(shape, dtype, 0u32),
        2 => FlexTensor::filled_typed(shape, dtype, 0u16),
        _ => FlexTensor::empty(shape, dtype),
    }
}
