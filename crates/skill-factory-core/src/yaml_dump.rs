//! yaml_dump
