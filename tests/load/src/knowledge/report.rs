//! The knowledge section of the report, and what makes the kit fail: the scenarios not
//! running, a file not ingested, the kit's vectors not the server's, no search answered, an
//! empty answer to every search, or any result the user may not read.

use std::fmt::Write;

use super::load::TARGET_P99_MS;
use super::IngestResult;
use crate::bench::Report;
use crate::report_extra::verdict;
use crate::stats::{f, Dist};

pub fn failures(r: &Report) -> Vec<String> {
    let Some(k) = &r.knowledge else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(e) = &k.error {
        out.push(format!("knowledge: {e}"));
    }
    for i in [&k.ingest, &k.ingest_upstream].into_iter().flatten() {
        if i.ready != i.files || i.failed > 0 || i.timed_out {
            out.push(format!(
                "knowledge ingestion ({}): {} of {} files ready, {} failed{} ({:?})",
                i.via,
                i.ready,
                i.files,
                i.failed,
                if i.timed_out { ", timed out" } else { "" },
                i.errors
            ));
        }
        if i.chunks == 0 {
            out.push(format!("knowledge ingestion ({}): no chunk stored", i.via));
        }
    }
    if let Some(c) = &k.embed_check {
        if c.min_cosine < 0.999 {
            out.push(format!(
                "knowledge: the kit's demo-embed differs from the server's (cosine {:.4}): the seeded vectors are not the server's",
                c.min_cosine
            ));
        }
    }
    if let Some(s) = &k.search {
        if s.searches == 0 {
            out.push("knowledge search: no search answered".into());
        } else if s.empty == s.searches {
            out.push("knowledge search: every search came back empty".into());
        }
        if s.violations > 0 {
            out.push(format!(
                "knowledge search: {} results from collections the user may not read: {:?}",
                s.violations, s.violation_examples
            ));
        }
        for p in &s.phases {
            if p.ok == 0 {
                out.push(format!(
                    "knowledge search: {} at {} answered nothing ({:?})",
                    p.what, p.concurrency, p.errors
                ));
            }
        }
    }
    out
}

fn dist(d: &Dist) -> String {
    format!(
        "{} / {} / {} / {}",
        f(d.p50_ms, 1),
        f(d.p95_ms, 1),
        f(d.p99_ms, 1),
        f(d.max_ms, 1)
    )
}

fn ingest(s: &mut String, i: &IngestResult) {
    let _ = writeln!(
        s,
        "| {} | {} ({} Markdown) | {:.1} | {} | {} / {} | {:.1} | {:.1} | {:.2} | {:.0} | {:.2} | {} | {} | {} | {} | {} ({}) |",
        i.via,
        i.files,
        i.markdown_files,
        i.bytes as f64 / 1_048_576.0,
        i.chunks,
        i.ready,
        i.failed,
        i.upload_secs,
        i.wall_secs,
        i.files_per_s,
        i.chunks_per_s,
        i.mib_per_s,
        dist(&i.file_ready),
        f(i.embed_secs, 2),
        i.embed_requests.map_or("–".into(), |n| format!("{n:.0}")),
        f(i.server_cpu_ms, 0),
        f(i.pg_backend_cpu_ms, 0),
        f(i.pg_all_cpu_ms, 0),
    );
}

pub fn markdown(r: &Report, s: &mut String) {
    let Some(k) = &r.knowledge else { return };
    let _ = writeln!(s, "\n## Knowledge (pgvector)\n");
    let _ = writeln!(
        s,
        "A server of its own on `{}` (PostgreSQL {}, pgvector {}, shared_buffers {}), fresh database, dropped after; default knowledge settings (2 ingestion workers, 300-token chunks). Setup {:.1} s, knowledge wall time {:.0} s.\n",
        k.pgvector_url, k.postgres_version, k.pgvector_version, k.shared_buffers, k.setup_secs, k.wall_secs
    );
    if let Some(e) = &k.error {
        let _ = writeln!(s, "**The knowledge scenarios failed**: {e}\n");
    }
    if k.ingest.is_some() {
        let _ = writeln!(s, "### Ingestion\n");
        let _ = writeln!(s, "One user uploads generated prose files (3 KiB up to `--knowledge-max-kib`, log-uniform; 2 uploads at a time, the server's per-user limit); the kit polls the collection every 100 ms until every file is `ready`. Rates are over the whole: first upload sent → last file seen ready. Embedder time = the server's `agentchat_knowledge_embed_duration_seconds` summed (the embedding calls alone).\n");
        let _ = writeln!(s, "| embedding model | files | MiB | chunks | ready / failed | uploads done s | all ready s | files/s | chunks/s | MiB/s | file 202 → ready p50 / p95 / p99 / max ms | embedder time s | embedding requests | server CPU ms | PG backends CPU ms (all PG) |");
        let _ = writeln!(
            s,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for i in [&k.ingest, &k.ingest_upstream].into_iter().flatten() {
            ingest(s, i);
        }
        for i in [&k.ingest, &k.ingest_upstream].into_iter().flatten() {
            let _ = writeln!(
                s,
                "\n{}: {:.0} chunks/s; upload request p50 / p99 {} / {} ms, {} retried 429s; embedding tokens {}; errors {:?}{}.",
                i.via,
                i.chunks_per_s,
                f(i.upload.p50_ms, 1),
                f(i.upload.p99_ms, 1),
                i.upload_retries,
                f(i.embedding_tokens, 0),
                i.errors,
                i.upstream.as_ref().map_or(String::new(), |u| format!("; fake upstream: {u}"))
            );
        }
        if let Some(c) = &k.embed_check {
            let _ = writeln!(s, "\nThe kit's demo-embed of {} ingested chunks against the server's stored vectors: lowest cosine {:.5} (the seeded corpus below carries the server's own vectors).", c.chunks, c.min_cosine);
        }
    }
    if let Some(sd) = &k.seed {
        let _ = writeln!(s, "\n### Search corpus\n");
        let _ = writeln!(s, "{} chunks ({:.0} bytes of text on average; the ingested ones above average {}) in {} documents and {} collections: one per user ({} users), {} of the admin's shared with `member`, {} shared only with a role no load user has. A member may read {:.1} % of the chunks. Collections and grants through the API ({:.1} s); documents and chunks by SQL COPY with demo-embed vectors of their text ({:.1} s), the server's HNSW index built again from its own definition ({:.1} s), VACUUM ANALYZE ({:.1} s). Sizes: `chunks` {:.0} MiB with its indexes, HNSW {:.0} MiB, full-text GIN {:.0} MiB.\n",
            sd.chunks, sd.chunk_bytes_avg,
            k.ingest.as_ref().map_or("–".into(), |i| format!("{:.0}", i.bytes as f64 / i.chunks.max(1) as f64)),
            sd.documents, sd.own_collections + sd.member_shared + sd.restricted, sd.users, sd.member_shared, sd.restricted,
            sd.member_readable_fraction * 100.0, sd.api_secs, sd.copy_secs, sd.index_secs, sd.vacuum_secs,
            sd.chunks_table_mib, sd.hnsw_index_mib, sd.tsv_index_mib);
    }
    let Some(x) = &k.search else { return };
    let _ = writeln!(s, "### Search latency\n");
    let _ = writeln!(s, "Closed loops, one per user (every user at once); then an open model at half the throughput those loops reached (arrivals at a fixed rate, users in turn, latency from the scheduled arrival); then one request at a time; each phase at most {} s and {} requests. Search = `GET /api/knowledge/search?q=…&k=5` (two or three words of one topic; one in twenty scoped to the user's own collection, one in twenty to a collection they may not read); baseline = `GET /api/knowledge` (the token check and its one query). Latency = request sent → body read.\n",
        r.config.as_ref().map_or(0.0, |c| c.knowledge_secs), r.config.as_ref().map_or(0, |c| c.knowledge_requests));
    let _ = writeln!(s, "| requests | concurrency / rate | ok | per s | p50 / p95 / p99 / max ms | server CPU ms/req | PG backends CPU ms/req | generator CPU ms/req | server's mean search ms | errors |\n|---|---|---|---|---|---|---|---|---|---|");
    for p in &x.phases {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {:?} |",
            p.what,
            p.rate_per_s
                .map_or(p.concurrency.to_string(), |r| format!("{r:.1}/s (open)")),
            p.ok,
            p.per_s,
            dist(&p.latency),
            f(p.server_cpu_ms_per_req, 2),
            f(p.pg_backend_cpu_ms_per_req, 2),
            f(p.generator_cpu_ms_per_req, 2),
            f(p.server_search_mean_ms, 1),
            p.errors
        );
    }
    let search_at = |c: usize| {
        x.phases
            .iter()
            .find(|p| p.what == "search" && p.concurrency == c)
    };
    let p99 = search_at(x.users).and_then(|p| p.latency.p99_ms);
    let open = search_at(0);
    let open_p99 = open.and_then(|p| p.latency.p99_ms);
    let _ = writeln!(
        s,
        "\nSearch / baseline at {} at once: p50 ×{}, p99 ×{}; one at a time: p50 ×{}, p99 ×{}.\n",
        x.users,
        f(x.ratio_p50, 1),
        f(x.ratio_p99, 1),
        f(x.ratio_p50_single, 1),
        f(x.ratio_p99_single, 1)
    );
    let _ = writeln!(s, "| target | measured | verdict |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| search p99 ≤ {TARGET_P99_MS:.0} ms, {} users at once | {} ms | {} |",
        x.users,
        f(p99, 1),
        verdict(p99.map(|v| v <= TARGET_P99_MS))
    );
    let _ = writeln!(
        s,
        "| (for comparison) search p99 ≤ {TARGET_P99_MS:.0} ms at half of that throughput, {} users in turn (open model) | {} ms at {}/s | {} |",
        x.users,
        f(open_p99, 1),
        f(open.and_then(|p| p.rate_per_s), 1),
        verdict(open_p99.map(|v| v <= TARGET_P99_MS))
    );
    let _ = writeln!(
        s,
        "| no result from a collection the user may not read | {} violations in {} results of {} searches | {} |",
        x.violations,
        x.results,
        x.searches,
        verdict((x.searches > 0).then_some(x.violations == 0))
    );
    let _ = writeln!(s, "\nChecked: {} searches, {} results, {} empty answers ({} of them to searches of collections the user may read: nothing there has the query's words or a vector within the server's `min_similarity`); {} results from shared collections (grants at work); {} searches scoped to the user's own collection, {} to a collection they may not read (each must come back empty).",
        x.searches, x.results, x.empty, x.empty_readable, x.shared_results, x.scoped_own, x.scoped_foreign);
    if !x.explains.is_empty() {
        let _ = writeln!(s, "\nThe server's statement run again alone under `EXPLAIN (ANALYZE, BUFFERS)` (a copy of `server/src/knowledge/search.rs` with the parameters written in; the first plan below, the rest folded):\n");
        let _ = writeln!(s, "| search | through the API ms | planning ms | execution ms | parameters |\n|---|---|---|---|---|");
        for e in &x.explains {
            let _ = writeln!(
                s,
                "| {} | {:.1} | {} | {} | `{}` |",
                e.label,
                e.api_ms,
                f(e.planning_ms, 1),
                f(e.execution_ms, 1),
                e.query
            );
        }
        for (i, e) in x.explains.iter().enumerate() {
            let body = e
                .plan
                .clone()
                .or_else(|| e.error.clone())
                .unwrap_or_default();
            if i == 0 {
                let _ = writeln!(s, "\n{}:\n\n```\n{body}\n```", e.label);
            } else {
                let _ = writeln!(
                    s,
                    "\n<details><summary>{}</summary>\n\n```\n{body}\n```\n\n</details>",
                    e.label
                );
            }
        }
    }
}
