//! A hash of a model's parameter values, to check that peers start alike.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// FNV-1a over the bytes of every float parameter, in visit order.
struct Fingerprint {
    hash: u64,
}

impl Fingerprint {
    fn eat(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.hash ^= u64::from(b);
            self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

impl<B: Backend> ModuleVisitor<B> for Fingerprint {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let data = param.val().into_data();
        self.eat(&data.bytes);
    }
}

/// The hash of `model`'s float parameter values (read back to the host).
pub(crate) fn parameter_fingerprint<B: Backend, M: Module<B>>(model: &M) -> u64 {
    let mut fingerprint = Fingerprint {
        hash: 0xCBF2_9CE4_8422_2325,
    };
    model.visit(&mut fingerprint);
    fingerprint.hash
}
