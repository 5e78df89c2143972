//! Tests for [`super::WorkspaceStore`], including hostile paths and
//! symlink escapes.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use std::os::unix::fs::{symlink, PermissionsExt};
use uuid::Uuid;

use super::*;

fn quota() -> Quota {
    Quota {
        max_bytes: 1000,
        max_files: 5,
        max_file_bytes: 400,
    }
}

fn store(q: Quota) -> (tempfile::TempDir, WorkspaceStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = WorkspaceStore::new(dir.path().join("ws"), q).unwrap();
    (dir, store)
}

fn user_dir(tmp: &tempfile::TempDir, user: Uuid) -> PathBuf {
    tmp.path().join("ws").join(user.to_string())
}

#[tokio::test]
async fn roundtrip_list_usage_delete() {
    let (tmp, s) = store(quota());
    let u = Uuid::new_v4();
    assert!(s.list(u).await.unwrap().is_empty());
    let mode = std::fs::metadata(user_dir(&tmp, u))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    let w = s.write(u, "a.txt", b"hello".to_vec(), false).await.unwrap();
    assert_eq!(
        w,
        Written {
            path: "a.txt".into(),
            size: 5,
            replaced: false
        }
    );
    s.write(u, "d/e/f.csv", b"x,y\n".to_vec(), false)
        .await
        .unwrap();
    assert_eq!(s.read(u, "a.txt").await.unwrap(), b"hello");
    let list = s.list(u).await.unwrap();
    let paths: Vec<_> = list.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "d/e/f.csv"]);
    assert_eq!(list[1].size, 4);
    assert!(list[0].modified.timestamp() > 1_600_000_000);
    assert_eq!(s.usage(u).await.unwrap(), (9, 2));

    // Other users see nothing.
    assert!(s.list(Uuid::new_v4()).await.unwrap().is_empty());
    assert!(matches!(
        s.read(Uuid::new_v4(), "a.txt").await,
        Err(WorkspaceError::NotFound)
    ));

    s.delete(u, "d/e/f.csv").await.unwrap();
    assert!(!user_dir(&tmp, u).join("d").exists(), "empty dirs pruned");
    assert!(matches!(
        s.delete(u, "d/e/f.csv").await,
        Err(WorkspaceError::NotFound)
    ));
    assert_eq!(s.usage(u).await.unwrap(), (5, 1));
    // No temp files left behind.
    assert_eq!(
        std::fs::read_dir(tmp.path().join("ws/.tmp"))
            .unwrap()
            .count(),
        0
    );
}

#[tokio::test]
async fn overwrite_semantics() {
    let (_tmp, s) = store(quota());
    let u = Uuid::new_v4();
    s.write(u, "a", b"1".to_vec(), false).await.unwrap();
    let err = s.write(u, "a", b"2".to_vec(), false).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::AlreadyExists));
    assert_eq!(err.code(), "already_exists");
    assert_eq!(s.read(u, "a").await.unwrap(), b"1");
    let w = s.write(u, "a", b"22".to_vec(), true).await.unwrap();
    assert!(w.replaced);
    assert_eq!(s.read(u, "a").await.unwrap(), b"22");
}

#[tokio::test]
async fn hostile_paths_rejected() {
    let (tmp, s) = store(quota());
    let u = Uuid::new_v4();
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../b",
        "a\0b",
        "..",
        "",
        "a//b",
        "./a",
        "..\\..\\x",
    ] {
        let err = s.read(u, bad).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{bad:?}: {err}");
        let err = s.write(u, bad, b"x".to_vec(), true).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{bad:?}");
        let err = s.delete(u, bad).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{bad:?}");
        let msg = err.to_string();
        assert!(!msg.contains(tmp.path().to_str().unwrap()), "{msg}");
    }
    assert!(s.list(u).await.unwrap().is_empty());
}

#[tokio::test]
async fn symlink_escapes_are_impossible() {
    let (tmp, s) = store(quota());
    let u = Uuid::new_v4();
    let victim = Uuid::new_v4();
    s.write(victim, "secret.txt", b"victim data".to_vec(), false)
        .await
        .unwrap();
    s.write(u, "mine.txt", b"ok".to_vec(), false).await.unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), "outside data").unwrap();

    let ud = user_dir(&tmp, u);
    symlink("/etc", ud.join("etc")).unwrap();
    symlink("/etc/passwd", ud.join("passwd")).unwrap();
    symlink(&outside, ud.join("out")).unwrap();
    symlink("../..", ud.join("up")).unwrap();
    symlink(format!("../{victim}"), ud.join("victim")).unwrap();

    for path in [
        "etc/passwd",
        "passwd",
        "out/secret",
        "up/outside/secret",
        "victim/secret.txt",
    ] {
        let err = s.read(u, path).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{path}: {err:?}");
        assert!(!err.to_string().contains(tmp.path().to_str().unwrap()));
        let err = s.read_text(u, path, 0, 100).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{path}");
    }
    for path in ["out/new.txt", "out/secret", "etc/evil", "victim/secret.txt"] {
        let err = s.write(u, path, b"pwned".to_vec(), true).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{path}: {err:?}");
        let err = s.delete(u, path).await.unwrap_err();
        assert_eq!(err.code(), "invalid_path", "{path}: {err:?}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "outside data"
    );
    assert!(!outside.join("new.txt").exists());
    assert_eq!(s.read(victim, "secret.txt").await.unwrap(), b"victim data");

    // Listing and usage ignore the links entirely.
    let paths: Vec<_> = s
        .list(u)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(paths, ["mine.txt"]);
    assert_eq!(s.usage(u).await.unwrap(), (2, 1));

    // Replacing or deleting the link itself only touches the link.
    s.write(u, "passwd", b"mine".to_vec(), true).await.unwrap();
    assert_eq!(s.read(u, "passwd").await.unwrap(), b"mine");
    s.delete(u, "out").await.unwrap();
    assert!(outside.join("secret").exists());
}

#[tokio::test]
async fn quotas_enforced_before_writing() {
    let (_tmp, s) = store(quota());
    let u = Uuid::new_v4();
    let err = s.write(u, "big", vec![b'x'; 401], false).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::TooLarge));
    s.write(u, "a", vec![b'x'; 400], false).await.unwrap();
    s.write(u, "b", vec![b'x'; 400], false).await.unwrap();
    let err = s.write(u, "c", vec![b'x'; 201], false).await.unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");
    assert!(err.to_string().contains("limit 1000"), "{err}");
    assert!(matches!(
        s.read(u, "c").await,
        Err(WorkspaceError::NotFound)
    ));
    // Overwriting counts the replaced file's size.
    s.write(u, "b", vec![b'y'; 400], true).await.unwrap();
    s.write(u, "c", vec![b'x'; 200], false).await.unwrap();
    // File count.
    s.delete(u, "a").await.unwrap();
    for name in ["d", "e", "f"] {
        s.write(u, name, b"1".to_vec(), false).await.unwrap();
    }
    let err = s.write(u, "g", b"1".to_vec(), false).await.unwrap_err();
    assert!(err.to_string().contains("5 files"), "{err}");
    // Replacing an existing file does not need a new slot.
    s.write(u, "d", b"2".to_vec(), true).await.unwrap();
    assert_eq!(s.usage(u).await.unwrap(), (603, 5));
}

#[tokio::test]
async fn concurrent_writes_respect_file_quota() {
    let (_tmp, s) = store(quota());
    let s = Arc::new(s);
    let u = Uuid::new_v4();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            s.write(u, &format!("f{i}"), b"x".to_vec(), false).await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        if t.await.unwrap().is_ok() {
            ok += 1;
        }
    }
    assert_eq!(ok, 5);
    assert_eq!(s.usage(u).await.unwrap(), (5, 5));
}

#[tokio::test]
async fn text_paging_and_binary() {
    let (_tmp, s) = store(Quota {
        max_bytes: 1 << 20,
        max_files: 10,
        max_file_bytes: 1 << 20,
    });
    let u = Uuid::new_v4();
    let text: String = (0..10_000).map(|i| format!("row {i}\n")).collect();
    s.write(u, "big.txt", text.clone().into_bytes(), false)
        .await
        .unwrap();
    let first = s.read_text(u, "big.txt", 0, 1000).await.unwrap();
    assert!(first.truncated);
    assert_eq!(first.total_lines, 10_000);
    assert_eq!(first.total_bytes, text.len() as u64);
    assert!(first.content.starts_with("row 0\n"));
    let next = first.next_offset.unwrap();
    let second = s.read_text(u, "big.txt", next, 1000).await.unwrap();
    assert_eq!(second.start_line, first.content.lines().count() as u64 + 1);
    assert!(text[next as usize..].starts_with(&second.content));

    s.write(u, "bin", vec![0xff, 0xfe, 0x00, 0x80], false)
        .await
        .unwrap();
    let err = s.read_text(u, "bin", 0, 100).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::NotText));
    assert_eq!(s.read(u, "bin").await.unwrap().len(), 4);
    let err = s.read_capped(u, "big.txt", 10).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::TooLarge));
}

#[tokio::test]
async fn directories_and_file_parents() {
    let (_tmp, s) = store(quota());
    let u = Uuid::new_v4();
    s.write(u, "dir/a", b"1".to_vec(), false).await.unwrap();
    let err = s.read(u, "dir").await.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    let err = s.write(u, "dir", b"1".to_vec(), true).await.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    let err = s.delete(u, "dir").await.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    // A file used as a directory.
    let err = s
        .write(u, "dir/a/b", b"1".to_vec(), false)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is a file"), "{err}");
    assert!(matches!(
        s.read(u, "dir/a/b").await,
        Err(WorkspaceError::NotFound)
    ));
}

#[test]
fn error_codes_are_stable() {
    for (err, code) in [
        (WorkspaceError::AlreadyExists, "already_exists"),
        (
            WorkspaceError::QuotaExceeded(String::new()),
            "quota_exceeded",
        ),
        (WorkspaceError::NotText, "not_text"),
        (WorkspaceError::Io(io::Error::other("x")), "io"),
    ] {
        assert_eq!(err.code(), code);
    }
}
