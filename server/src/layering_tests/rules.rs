//! Checks of the table itself: its names, its cycles, the HTTP edge, and that every module
//! under `src` is in a room.

use super::scan::room_of;
use super::table::Room;

/// What is wrong with the table: a room used but not in it, a path that names no module
/// (`exists` says which do), a room twice, a cycle, an edge room used off the HTTP side.
pub fn table_problems(
    rooms: &[Room],
    edge: &[&str],
    edge_users: &[&str],
    exists: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut found = Vec::new();
    for (i, room) in rooms.iter().enumerate() {
        if rooms[..i].iter().any(|r| r.name == room.name) {
            found.push(format!("`{}` is in the table twice", room.name));
        }
        // A name is an item: its path less the last part is a module.
        let names = room
            .names
            .iter()
            .map(|n| n.rsplit_once("::").map_or(*n, |(m, _)| m));
        for module in room.held().iter().copied().chain(names) {
            if !exists(module) {
                found.push(format!(
                    "`{}` names `{module}`, which is no module",
                    room.name
                ));
            }
        }
        if !room.names.is_empty() && room.why.is_empty() {
            found.push(format!(
                "`{}` names items of other rooms: say why",
                room.name
            ));
        }
        for used in room.uses {
            if !rooms.iter().any(|r| r.name == *used) {
                found.push(format!("`{}` uses `{used}`, which is no room", room.name));
            }
            if edge.contains(used) && !edge_users.contains(&room.name) {
                found.push(format!(
                    "`{}` uses `{used}`: only the HTTP side may ({})",
                    room.name,
                    edge_users.join(", ")
                ));
            }
        }
    }
    if let Some(cycle) = cycle(rooms) {
        found.push(format!("the table has a cycle: {}", cycle.join(" -> ")));
    }
    found
}

/// A cycle of `uses` in the table, if there is one (`["a", "b", "a"]`).
pub fn cycle(rooms: &[Room]) -> Option<Vec<&'static str>> {
    // 0: not seen, 1: on the current path, 2: done.
    let mut state = vec![0u8; rooms.len()];
    let mut path = Vec::new();
    (0..rooms.len()).find_map(|i| visit(rooms, i, &mut state, &mut path))
}

fn visit(
    rooms: &[Room],
    i: usize,
    state: &mut [u8],
    path: &mut Vec<&'static str>,
) -> Option<Vec<&'static str>> {
    match state[i] {
        2 => return None,
        1 => {
            let from = path.iter().position(|n| *n == rooms[i].name).unwrap_or(0);
            let mut cycle = path[from..].to_vec();
            cycle.push(rooms[i].name);
            return Some(cycle);
        }
        _ => {}
    }
    state[i] = 1;
    path.push(rooms[i].name);
    for used in rooms[i].uses {
        if let Some(j) = rooms.iter().position(|r| r.name == *used) {
            if let Some(cycle) = visit(rooms, j, state, path) {
                return Some(cycle);
            }
        }
    }
    path.pop();
    state[i] = 2;
    None
}

/// The top-level modules (`src`'s directories and files, `lib.rs`, `main.rs` and the test
/// modules left out) that are in no room.
pub fn unroomed(modules: &[String], rooms: &[Room]) -> Vec<String> {
    modules
        .iter()
        .filter(|m| room_of(std::slice::from_ref(*m), rooms).is_none())
        .map(|m| format!("module `{m}` is in no room of the table: add its row"))
        .collect()
}
