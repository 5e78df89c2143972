//! The jail's seccomp filters, compiled here to classic BPF and handed to bwrap
//! (`--add-seccomp-fd`). Namespaces already take the network, other processes and the host's
//! files away; the filters close what namespaces do not: the kernel interfaces a jailed
//! process has no business with and that have carried most container escapes (ptrace, the
//! mount APIs, new namespaces, keyrings, BPF, perf, userfaultfd, io_uring, terminal
//! injection, reading another process's memory).
//!
//! Two filters, because one filter has one answer for all its matches: everything denied
//! answers `EPERM`, and `clone3` answers `ENOSYS` so that glibc falls back to `clone`, whose
//! flags (unlike `clone3`'s, behind a pointer) the filter can see.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Syscalls refused outright (numbers are `i64` on every architecture seccompiler knows).
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_kexec_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_personality,
];

/// `clone` flags that would make a new namespace.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWCGROUP,
];

/// Terminal ioctls that push input into, or take over, the controlling terminal.
const DENIED_IOCTLS: &[libc::c_ulong] = &[libc::TIOCSTI, libc::TIOCLINUX];

/// The filters, each as the bytes of its `struct sock_filter` array (what bwrap reads).
pub fn filters() -> Result<Vec<Vec<u8>>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let denied = denied_filter(arch)?;
    let clone3 = single(
        arch,
        libc::SYS_clone3,
        Vec::new(),
        SeccompAction::Errno(libc::ENOSYS as u32),
    )?;
    Ok(vec![to_bytes(&denied), to_bytes(&clone3)])
}

/// `EPERM` for [`DENIED`], for `clone` with a namespace flag and for the terminal ioctls.
fn denied_filter(arch: TargetArch) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let flag_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            rule(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, flag_rules);
    // The request is compared on its low 32 bits: the kernel ignores the upper half, so a
    // request with junk up there is the same ioctl.
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|&request| rule(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    compile(rules, SeccompAction::Errno(libc::EPERM as u32), arch)
}

fn rule(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompRule, String> {
    SeccompCondition::new(arg, len, op, value)
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| format!("seccomp rule: {e}"))
}

fn single(
    arch: TargetArch,
    nr: i64,
    conditions: Vec<SeccompRule>,
    action: SeccompAction,
) -> Result<BpfProgram, String> {
    compile(BTreeMap::from([(nr, conditions)]), action, arch)
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    on_match: SeccompAction,
    arch: TargetArch,
) -> Result<BpfProgram, String> {
    SeccompFilter::new(rules, SeccompAction::Allow, on_match, arch)
        .and_then(BpfProgram::try_from)
        .map_err(|e| format!("seccomp filter: {e}"))
}

/// The program as the kernel's `struct sock_filter` array, in this machine's byte order.
fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_to_whole_instructions() {
        let filters = filters().unwrap();
        assert_eq!(filters.len(), 2);
        for f in &filters {
            assert!(!f.is_empty());
            assert_eq!(f.len() % 8, 0);
        }
    }
}
