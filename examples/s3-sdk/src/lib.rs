//! aws-sdk-s3 against sim-s3: the tests are the crate.
