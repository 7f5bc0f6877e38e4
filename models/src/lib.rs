//! Reference models, generic over `B: Backend`.

pub mod bert;
pub mod error;
pub mod params;
pub mod pytorch_import;
pub mod resnet;
pub mod resnet_import;
pub mod swin;

pub use bert::{BertConfig, BertForSequenceClassification, BertInput, BertModel, HiddenAct};
pub use error::UnknownModel;
pub use params::{NamedTensor, named_tensors, num_trainable_params, torch_key};
pub use resnet::{Block, BlockKind, ResNet, ResNetConfig};
pub use resnet_import::{
    ResNetImportError, load_torchvision_resnet, load_torchvision_resnet_backbone,
};
pub use swin::{SwinConfig, SwinTransformer};
