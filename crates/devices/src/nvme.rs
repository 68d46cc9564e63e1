//! Read-only NVMe admin commands through the kernel's passthrough ioctl:
//! Get Log Page, and ScaleFlux's free-space query. No nvme-cli needed.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `struct nvme_passthru_cmd` (linux/nvme_ioctl.h), 72 bytes.
#[repr(C)]
#[derive(Default)]
struct PassthruCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

const _: () = assert!(std::mem::size_of::<PassthruCmd>() == 72);

/// `NVME_IOCTL_ADMIN_CMD` = _IOWR('N', 0x41, struct nvme_admin_cmd).
const NVME_IOCTL_ADMIN_CMD: libc::c_ulong = 0xC048_4E41;
/// ScaleFlux `SFX_GET_FREESPACE` as nvme-cli's sfx plugin compiles it.
const SFX_GET_FREESPACE: libc::c_ulong = 0xC058_4E40;
/// ScaleFlux vendor admin opcode for the free-space query.
const SFX_OPC_FREESPACE: u8 = 0xD3;

fn admin(dev: &Path, cmd: &mut PassthruCmd) -> io::Result<()> {
    let f = File::open(dev)?;
    // Safety: cmd is a valid, fully initialized nvme_passthru_cmd whose addr
    // points to a live buffer of data_len bytes owned by the caller.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), NVME_IOCTL_ADMIN_CMD, cmd as *mut PassthruCmd) };
    match rc {
        0 => Ok(()),
        r if r < 0 => Err(io::Error::last_os_error()),
        status => Err(io::Error::other(format!("NVMe status {status:#x}"))),
    }
}

/// Reads `len` bytes of log page `lid` (all namespaces) from controller `dev`.
pub fn get_log_page(dev: &Path, lid: u8, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let numd = (len / 4) as u32 - 1;
    let mut cmd = PassthruCmd {
        opcode: 0x02,
        nsid: 0xFFFF_FFFF,
        addr: buf.as_mut_ptr() as u64,
        data_len: len as u32,
        cdw10: ((numd & 0xFFFF) << 16) | u32::from(lid),
        cdw11: numd >> 16,
        ..Default::default()
    };
    admin(dev, &mut cmd)?;
    Ok(buf)
}

/// ScaleFlux's free-space reply (88 bytes): the driver ioctl on the namespace
/// first, the vendor admin command as nvme-cli does otherwise.
pub fn sfx_free_space(namespace: &Path) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 88];
    let f = File::open(namespace)?;
    // Safety: the ioctl writes at most 88 bytes into buf, which is 88 bytes long.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), SFX_GET_FREESPACE, buf.as_mut_ptr()) };
    if rc == 0 {
        return Ok(buf);
    }
    let mut cmd = PassthruCmd {
        opcode: SFX_OPC_FREESPACE,
        addr: buf.as_mut_ptr() as u64,
        data_len: buf.len() as u32,
        ..Default::default()
    };
    admin(namespace, &mut cmd)?;
    Ok(buf)
}
