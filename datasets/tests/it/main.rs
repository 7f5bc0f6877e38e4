//! burnacc-datasets's tests, one binary. The modules `tier1`, `tier2`, `tier3` are the test tiers
//! (`scripts/test.sh --tier N`); cargo-nextest runs each test in a process of its own.

mod tier1 {
    mod idx_fashion_mnist;
    mod image_folder;
    mod loader;
    mod mock_imagenet;
    mod text_batch;
    mod text_checksum;
    mod text_examples;
    mod text_loader;
    mod text_tokenizer;
    mod transform;
}
