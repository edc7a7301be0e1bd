//! CUPTI's numbered kinds, as a copy's and a memory record's fields carry them (`CUpti_ActivityMemcpyKind`,
//! `CUpti_ActivityMemoryKind`), by the names CUPTI gives them without their prefixes. The trace keeps CUPTI's
//! numbers, so a reader of the JSON meets the numbers CUPTI's documentation lists.

/// The direction of a copy (`Line::Memcpy`'s `copy_kind`).
pub mod copy {
    pub const HTOD: u8 = 1;
    pub const DTOH: u8 = 2;
    pub const HTOA: u8 = 3;
    pub const ATOH: u8 = 4;
    pub const ATOA: u8 = 5;
    pub const ATOD: u8 = 6;
    pub const DTOA: u8 = 7;
    pub const DTOD: u8 = 8;
    pub const HTOH: u8 = 9;
    pub const PTOP: u8 = 10;
}

/// The kind of memory a copy reads or writes, or a memset writes (`src_kind`, `dst_kind`, `memory_kind`).
pub mod memory {
    pub const PAGEABLE: u8 = 1;
    pub const PINNED: u8 = 2;
    pub const DEVICE: u8 = 3;
    pub const ARRAY: u8 = 4;
    pub const MANAGED: u8 = 5;
    pub const DEVICE_STATIC: u8 = 6;
    pub const MANAGED_STATIC: u8 = 7;
}
