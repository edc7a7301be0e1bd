//! Which CUDA API a call goes through: the driver API (`cu*`, what the driver library exports) or the
//! runtime API (`cuda*`, libcudart: what nvcc-built programs, PyTorch, JAX and CuPy call).
//!
//! The runtime is a layer over the driver: it starts the primary context on first use and loads a
//! program's kernels for it. Measuring the same case through both shows whether that layer adds a wait.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// The driver API (libcuda). Recordings made before the runtime was measured hold only these.
    #[default]
    Driver,
    /// The runtime API (libcudart), loaded at run time.
    Runtime,
}

impl Api {
    pub const ALL: [Api; 2] = [Api::Driver, Api::Runtime];

    pub fn as_str(self) -> &'static str {
        match self {
            Api::Driver => "driver",
            Api::Runtime => "runtime",
        }
    }

    /// The prefix of a case id measured through this API: runtime ids start with `runtime/`; driver ids
    /// have none, so that ids of older recordings and of the C++ reference stay valid.
    pub fn id_prefix(self) -> &'static str {
        match self {
            Api::Driver => "",
            Api::Runtime => "runtime/",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_without_an_api_is_a_driver_record() {
        #[derive(Deserialize)]
        struct S {
            #[serde(default)]
            api: Api,
        }
        let s: S = serde_json::from_str("{}").unwrap();
        assert_eq!(s.api, Api::Driver);
        let s: S = serde_json::from_str(r#"{"api":"runtime"}"#).unwrap();
        assert_eq!(s.api, Api::Runtime);
    }
}
