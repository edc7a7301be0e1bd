//! What machine a measurement was made on, as a recording stores it: the GPU, its driver and links, the
//! CUDA runtime found, the host. `async-lab info` reads these on the machine (`host/src/info.rs`); here is
//! only the data and how it prints.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The machine description stored with every result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MachineInfo {
    pub gpu_name: String,
    pub gpu_ordinal: i32,
    pub compute_capability: String,
    pub sm_count: i32,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    /// Driver API version, e.g. "13.0".
    pub cuda_driver_api: String,
    /// The kernel module's release, e.g. "580.159.04", where /proc tells it.
    pub driver_release: Option<String>,
    pub pci_bus_id: String,
    /// e.g. "32.0 GT/s PCIe x16", from sysfs.
    pub pcie_link: Option<String>,
    pub pcie_max_link: Option<String>,
    pub sm_clock_max_mhz: i32,
    pub memory_clock_max_mhz: i32,
    pub async_engine_count: i32,
    pub concurrent_managed_access: bool,
    pub pageable_memory_access: bool,
    pub host_cpu: String,
    pub host_cpus: usize,
    pub os: String,
    pub tool_version: String,
    pub git_commit: String,
    /// How many GPUs the driver sees, their names by ordinal, and what it says about each ordered pair.
    #[serde(default)]
    pub gpu_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_links: Vec<PeerLink>,
    /// The CUDA runtime library the runtime-API experiments used, or why there was none (absent in
    /// recordings made before the runtime was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_runtime: Option<RuntimeInfo>,
}

/// What the driver reports about one ordered pair of GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerLink {
    pub src: i32,
    pub dst: i32,
    /// `cuDeviceCanAccessPeer(src, dst)`.
    pub can_access: bool,
    /// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK`: relative, lower is faster (0 where there is no access).
    pub performance_rank: i32,
    pub native_atomics: bool,
}

/// What recordings and `info` say about the runtime (no folder names: only the file and how it was found).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// e.g. "libcudart.so.13.0.96"; absent when none could be used.
    pub file: Option<String>,
    pub source: Option<String>,
    /// e.g. "13.0".
    pub version: Option<String>,
    /// Why the runtime experiments were not run, when they were not.
    pub unusable: Option<String>,
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl fmt::Display for MachineInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unknown = || "unknown".to_owned();
        writeln!(f, "GPU {}            {}", self.gpu_ordinal, self.gpu_name)?;
        writeln!(f, "compute capability {} ({} SMs)", self.compute_capability, self.sm_count)?;
        writeln!(
            f,
            "memory             {:.1} GiB total, {:.1} GiB free",
            gib(self.memory_total_bytes),
            gib(self.memory_free_bytes)
        )?;
        writeln!(
            f,
            "driver             {} (CUDA driver API {})",
            self.driver_release.clone().unwrap_or_else(unknown),
            self.cuda_driver_api
        )?;
        writeln!(
            f,
            "PCIe               {} now, {} max (bus {})",
            self.pcie_link.clone().unwrap_or_else(unknown),
            self.pcie_max_link.clone().unwrap_or_else(unknown),
            self.pci_bus_id
        )?;
        writeln!(f, "clocks (max)       SM {} MHz, memory {} MHz", self.sm_clock_max_mhz, self.memory_clock_max_mhz)?;
        writeln!(
            f,
            "copy engines       {} (concurrent managed access: {}, pageable memory access: {})",
            self.async_engine_count, self.concurrent_managed_access, self.pageable_memory_access
        )?;
        if let Some(n) = self.gpu_count {
            let names: Vec<String> = self.gpu_names.iter().enumerate().map(|(i, n)| format!("{i}: {n}")).collect();
            writeln!(f, "GPUs               {n} ({})", names.join(", "))?;
        }
        for l in &self.peer_links {
            writeln!(
                f,
                "peer {} → {}         {} (performance rank {}, native atomics {})",
                l.src,
                l.dst,
                if l.can_access { "direct access possible" } else { "no direct access" },
                l.performance_rank,
                l.native_atomics
            )?;
        }
        if let Some(rt) = &self.cuda_runtime {
            match (&rt.version, &rt.file, &rt.unusable) {
                (Some(v), Some(file), _) => writeln!(
                    f,
                    "runtime            CUDA runtime API {v} ({file}, found as {})",
                    rt.source.as_deref().unwrap_or("?")
                )?,
                (_, _, Some(why)) => writeln!(f, "runtime            none: {why}")?,
                _ => writeln!(f, "runtime            unknown")?,
            }
        }
        writeln!(f, "host               {} ({} CPUs), {}", self.host_cpu, self.host_cpus, self.os)?;
        write!(f, "async-lab          {} ({})", self.tool_version, self.git_commit)
    }
}
