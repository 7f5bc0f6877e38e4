//! Reference models, generic over `B: Backend`.

pub mod batch_norm;
pub mod bert;
pub mod checkpoint_file;
pub mod error;
pub mod params;
pub mod pytorch_export;
pub mod pytorch_import;
pub mod resnet;
pub mod resnet_import;
pub mod swin;

pub use batch_norm::BatchNorm;
pub use bert::{BertConfig, BertForSequenceClassification, BertInput, BertModel, HiddenAct};
pub use checkpoint_file::{CheckpointFormat, checkpoint_tensor_shape};
pub use error::UnknownModel;
pub use params::{NamedTensor, named_tensors, num_trainable_params, torch_key};
pub use pytorch_export::{
    ExportError, ReferenceData, ReferenceExport, ReferenceTensor, reference_state_dict,
    save_reference,
};
pub use resnet::{Block, BlockKind, ResNet, ResNetConfig};
pub use resnet_import::{
    ResNetImportError, load_torchvision_resnet, load_torchvision_resnet_backbone,
};
pub use swin::{SwinConfig, SwinTransformer};
