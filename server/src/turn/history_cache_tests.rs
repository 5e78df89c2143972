use super::*;
use crate::domain::{MessageRole, MessageStatus};

fn message(seq: i64, text: &str) -> Message {
    Message {
        id: Uuid::new_v4(),
        seq,
        conversation_id: Uuid::nil(),
        role: MessageRole::User,
        content: text.to_owned(),
        tool_calls: None,
        tool_call_id: None,
        attachments: None,
        status: MessageStatus::Complete,
        status_reason: None,
        model: None,
        input_tokens: None,
        output_tokens: None,
        duration_ms: None,
        created_at: chrono::Utc::now(),
        citations: None,
    }
}

/// What the whole read returns for the first `n` of `all` with `room`.
fn whole_read(all: &[(Message, i64)], n: usize, room: u64) -> Recent {
    let costs: Vec<i64> = all[..n].iter().map(|(_, c)| *c).collect();
    let first = first_kept(&costs, room);
    Recent {
        messages: all[first..n].iter().map(|(m, _)| m.clone()).collect(),
        costs: costs[first..].to_vec(),
        total: n as i64,
    }
}

fn after(all: &[(Message, i64)], from: usize, to: usize) -> After {
    After {
        intact: true,
        messages: all[from..to].iter().map(|(m, _)| m.clone()).collect(),
        costs: all[from..to].iter().map(|(_, c)| *c).collect(),
    }
}

fn ids(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(|m| m.seq).collect()
}

#[test]
fn the_cut_keeps_the_newest_messages_that_fit_and_zero_cost_ones_before_them() {
    assert_eq!(first_kept(&[5, 5, 5], 10), 1);
    assert_eq!(first_kept(&[5, 5, 5], 15), 0);
    assert_eq!(
        first_kept(&[5, 0, 5, 5], 10),
        1,
        "a free message rides along"
    );
    assert_eq!(first_kept(&[5, 5, 20], 10), 3, "nothing fits");
    assert_eq!(first_kept(&[], 10), 0);
}

#[test]
fn what_is_known_plus_what_came_after_is_what_a_whole_read_returns() {
    // Costs as stored: varied, some free (tool results), some large.
    let all: Vec<(Message, i64)> = (0..60)
        .map(|i| {
            let cost = match i % 7 {
                0 => 0,
                3 => 40,
                _ => 3 + i % 5,
            };
            (message(100 + i, &"x".repeat(i as usize)), cost)
        })
        .collect();
    let mut answered = 0;
    for room in [0_u64, 5, 17, 60, 150, 400, 10_000] {
        for known_at in 1..all.len() {
            let first = whole_read(&all, known_at, room);
            let first_len = first.messages.len();
            if Known::from_whole(first).1.is_none() {
                continue;
            }
            for now in known_at..=all.len() {
                let want = whole_read(&all, now, room);
                let known = Known::from_whole(whole_read(&all, known_at, room))
                    .1
                    .unwrap();
                match known.extend(after(&all, known_at, now), room) {
                    Some((got, next)) => {
                        answered += 1;
                        assert_eq!(ids(&got.messages), ids(&want.messages), "room {room}");
                        assert_eq!(got.total, want.total);
                        assert_eq!(next.costs, want.costs);
                        assert_eq!(next.total, want.total);
                        assert_eq!(next.last_seq, all[now - 1].0.seq);
                        assert_eq!(ids(&next.messages), ids(&want.messages));
                    }
                    // It may only decline when everything it knows fits and it does not
                    // know the conversation from its first message.
                    None => {
                        assert_eq!(first_kept(&want.costs, room), 0);
                        assert!(first_len < known_at, "room {room}");
                    }
                }
            }
        }
    }
    assert!(answered > 1000, "{answered}");
}

#[test]
fn a_removed_message_sends_the_start_back_to_a_whole_read() {
    let all: Vec<(Message, i64)> = (0..5).map(|i| (message(i, "m"), 1)).collect();
    let known = Known::from_whole(whole_read(&all, 5, 100)).1.unwrap();
    let mut gone = after(&all, 5, 5);
    gone.intact = false;
    assert!(known.extend(gone, 100).is_none());
}

#[test]
fn a_conversation_with_nothing_that_fits_is_not_kept() {
    let all: Vec<(Message, i64)> = vec![(message(1, "big"), 500)];
    let (history, known) = Known::from_whole(whole_read(&all, 1, 10));
    assert!(known.is_none());
    assert!(history.messages.is_empty());
    assert_eq!(history.total, 1);
}

#[test]
fn the_cache_stays_within_its_bounds_and_drops_the_least_recently_used() {
    let cache = HistoryCache::default();
    let ids: Vec<Uuid> = (0..MAX_CONVERSATIONS + 10)
        .map(|_| Uuid::new_v4())
        .collect();
    let one = |seq| {
        Known::from_whole(Recent {
            messages: vec![message(seq, "hello")],
            costs: vec![1],
            total: 1,
        })
        .1
        .unwrap()
    };
    cache.put(ids[0], one(1));
    for (i, id) in ids.iter().enumerate().skip(1) {
        // The first conversation stays in use: taken by each start, put back after it.
        let known = cache
            .take(ids[0])
            .unwrap_or_else(|| panic!("dropped at {i}"));
        cache.put(ids[0], known);
        cache.put(*id, one(i as i64));
    }
    assert!(cache.len() <= MAX_CONVERSATIONS);
    assert!(cache.take(ids[1]).is_none(), "least recently used, dropped");
    assert!(cache.take(ids[ids.len() - 1]).is_some());
    assert!(cache.take(ids[0]).is_some(), "in use, kept");
    assert!(cache.take(ids[0]).is_none(), "taken out");

    // Bytes too: a history larger than an eighth of the bound is not kept at all.
    let big = Known::from_whole(Recent {
        messages: vec![message(1, &"x".repeat(MAX_BYTES / 8 + 1))],
        costs: vec![1],
        total: 1,
    })
    .1
    .unwrap();
    cache.put(ids[0], big);
    assert!(cache.take(ids[0]).is_none());
    let bytes = cache.inner.lock().unwrap().bytes;
    assert!(bytes <= MAX_BYTES, "{bytes}");
}

#[test]
fn a_history_nothing_else_holds_is_moved_not_copied() {
    let all: Vec<(Message, i64)> = (0..6).map(|i| (message(i, "some text"), 1)).collect();
    let (history, known) = Known::from_whole(whole_read(&all, 4, 3));
    let known = known.unwrap();
    assert_eq!(ids(&known.messages), [1, 2, 3]);
    let kept_text = known.messages[2].content.as_ptr();
    drop(history);
    let (history, next) = known.extend(after(&all, 4, 6), 3).unwrap();
    assert_eq!(ids(&history.messages), [3, 4, 5]);
    // The message kept from before is the same one, not a copy of it.
    assert_eq!(history.messages[0].content.as_ptr(), kept_text);
    // What is counted is kept up to date as messages come and go.
    let counted: usize = history.messages.iter().map(message_bytes).sum();
    assert_eq!(next.bytes, counted);
}
