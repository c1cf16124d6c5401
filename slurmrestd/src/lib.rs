//! slurmrestd: the REST API (OpenAPI data_parser v0.0.45) over the controller
//! and accounting services.
