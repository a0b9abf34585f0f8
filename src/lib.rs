pub mod config;
pub mod model;
