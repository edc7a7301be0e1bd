//! What machine a measurement was made on: GPU, driver, PCIe link, host CPU and OS (`async-lab info`, and
//! the header of every recording).

pub use async_lab_core::machine::MachineInfo;
use async_lab_driver::{device, device_handle, sys, Gpu};

/// An attribute of the GPU, or -1 where the driver does not report it.
fn attr(gpu: &Gpu, a: sys::CUdevice_attribute) -> i32 {
    device::attribute(gpu.device, a).unwrap_or(-1)
}

/// The name of GPU `ordinal`.
fn device_name(ordinal: i32) -> anyhow::Result<String> {
    Ok(device::name(device_handle(ordinal)?)?)
}

/// Reads the machine. `with_runtime`: also look for the CUDA runtime library and load it (not done for a
/// driver-only run, which must not depend on, or be disturbed by, a libcudart).
pub fn read(gpu: &Gpu, with_runtime: bool) -> anyhow::Result<MachineInfo> {
    use sys::CUdevice_attribute as A;
    gpu.bind()?;
    let gpu_name = device_name(gpu.ordinal)?;
    let (free, total) = device::memory_free_and_total()?;
    let version = device::driver_version()?;
    let (domain, bus, dev) = (
        attr(gpu, A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        attr(gpu, A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        attr(gpu, A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    );
    let pci_bus_id = format!("{domain:04x}:{bus:02x}:{dev:02x}.0");
    let link = |prefix: &str| -> Option<String> {
        let base = format!("/sys/bus/pci/devices/{pci_bus_id}");
        let speed = std::fs::read_to_string(format!("{base}/{prefix}_link_speed")).ok()?;
        let width = std::fs::read_to_string(format!("{base}/{prefix}_link_width")).ok()?;
        Some(format!("{} x{}", speed.trim(), width.trim()))
    };
    Ok(MachineInfo {
        gpu_name,
        gpu_ordinal: gpu.ordinal,
        compute_capability: format!(
            "{}.{}",
            attr(gpu, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attr(gpu, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        ),
        sm_count: attr(gpu, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        memory_total_bytes: total as u64,
        memory_free_bytes: free as u64,
        cuda_driver_api: format!("{}.{}", version / 1000, (version % 1000) / 10),
        driver_release: driver_release(),
        pcie_link: link("current"),
        pcie_max_link: link("max"),
        pci_bus_id,
        sm_clock_max_mhz: attr(gpu, A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000,
        memory_clock_max_mhz: attr(gpu, A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000,
        async_engine_count: attr(gpu, A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
        concurrent_managed_access: attr(gpu, A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) == 1,
        pageable_memory_access: attr(gpu, A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS) == 1,
        host_cpu: host_cpu(),
        host_cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        os: os_name(),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_commit: crate::GIT_COMMIT.to_owned(),
        gpu_count: Some(gpu.device_count),
        gpu_names: (0..gpu.device_count).map(device_name).collect::<anyhow::Result<_>>()?,
        // Best effort: a driver that cannot describe its links does not stop a run.
        peer_links: async_lab_driver::peer::links(gpu.device_count).unwrap_or_default(),
        cuda_runtime: with_runtime.then(async_lab_driver::runtime::info),
    })
}

/// "580.159.04" from /proc/driver/nvidia/version, where readable.
fn driver_release() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.matches('.').count() >= 1)
        .map(str::to_owned)
}

fn host_cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_owned())));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_owned());
    match (pretty, kernel) {
        (Some(p), Some(k)) => format!("{p}, Linux {k}"),
        (Some(p), None) => p,
        (None, Some(k)) => format!("Linux {k}"),
        (None, None) => std::env::consts::OS.to_owned(),
    }
}
