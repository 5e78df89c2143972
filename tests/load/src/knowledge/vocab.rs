//! The vocabulary of the generated prose: twelve topics of two dozen nouns, and the
//! adjectives, verbs, subjects, prepositions, times and connectives every topic shares.
//! Small on purpose: queries made of the same words always find something.

/// Topics: what a document is about (its nouns).
#[rustfmt::skip]
pub const TOPICS: &[&[&str]] = &[
    &["invoice", "refund", "payment", "receipt", "ledger", "balance", "charge", "discount",
      "subscription", "currency", "tax", "statement", "credit", "debit", "reconciliation",
      "vendor", "purchase", "quote", "budget", "forecast", "margin", "expense", "payroll",
      "audit"],
    &["parcel", "carrier", "warehouse", "pallet", "freight", "courier", "customs", "tracking",
      "delivery", "route", "depot", "container", "manifest", "dispatch", "label", "loading",
      "truck", "port", "inventory", "shelf", "forklift", "backorder", "shipment", "consignment"],
    &["password", "token", "certificate", "firewall", "breach", "encryption", "credential",
      "vulnerability", "patch", "incident", "phishing", "malware", "permission", "role",
      "session", "key", "policy", "intrusion", "scanner", "alert", "compliance", "threat",
      "firmware", "audit"],
    &["employee", "contract", "salary", "onboarding", "holiday", "pension", "interview",
      "candidate", "benefit", "appraisal", "training", "manager", "leave", "recruitment",
      "mentor", "promotion", "overtime", "handbook", "grievance", "shift", "allowance",
      "retirement", "probation", "colleague"],
    &["server", "database", "deployment", "cluster", "latency", "throughput", "cache", "queue",
      "replica", "index", "migration", "rollback", "pipeline", "container", "kernel", "thread",
      "memory", "socket", "compiler", "library", "endpoint", "schema", "backup", "benchmark"],
    &["clause", "liability", "warranty", "agreement", "arbitration", "jurisdiction", "indemnity",
      "trademark", "patent", "license", "lawsuit", "counsel", "regulation", "statute",
      "signature", "amendment", "breach", "confidentiality", "dispute", "settlement", "court",
      "notice", "termination", "obligation"],
    &["campaign", "audience", "brand", "newsletter", "webinar", "conversion", "funnel", "advert",
      "sponsor", "launch", "survey", "slogan", "influencer", "banner", "channel", "segment",
      "lead", "impression", "engagement", "promotion", "outreach", "persona", "catalogue",
      "press"],
    &["ticket", "customer", "complaint", "escalation", "agent", "callback", "chatbot",
      "satisfaction", "feedback", "resolution", "queue", "macro", "outage", "workaround",
      "apology", "troubleshooting", "hotline", "backlog", "priority", "response", "article",
      "faq", "survey", "followup"],
    &["office", "elevator", "heating", "lighting", "parking", "cafeteria", "desk", "badge",
      "reception", "cleaning", "maintenance", "boiler", "ventilation", "plumbing", "lease",
      "floor", "meeting", "room", "projector", "printer", "locker", "canteen", "garden",
      "generator"],
    &["experiment", "hypothesis", "sample", "dataset", "laboratory", "protocol", "microscope",
      "reagent", "trial", "publication", "grant", "reviewer", "citation", "model", "variance",
      "measurement", "instrument", "specimen", "observation", "thesis", "journal", "conference",
      "prototype", "simulation"],
    &["flight", "hotel", "itinerary", "passport", "visa", "luggage", "airport", "booking",
      "reimbursement", "conference", "taxi", "train", "mileage", "ticket", "lounge", "departure",
      "arrival", "hostel", "rental", "insurance", "schedule", "destination", "layover", "receipt"],
    &["feature", "roadmap", "release", "prototype", "requirement", "specification", "customer",
      "feedback", "backlog", "milestone", "sprint", "design", "mockup", "usability", "metric",
      "launch", "pricing", "tier", "competitor", "persona", "wireframe", "onboarding",
      "experiment", "retention"],
];

#[rustfmt::skip]
pub const ADJECTIVES: &[&str] = &[
    "quarterly", "annual", "monthly", "urgent", "final", "initial", "pending", "approved",
    "rejected", "standard", "premium", "internal", "external", "regional", "global", "local",
    "new", "old", "updated", "revised", "detailed", "brief", "complete", "partial", "manual",
    "automatic", "secure", "shared", "private", "public", "late", "early", "minor", "major",
    "critical", "routine", "seasonal", "temporary", "permanent", "weekly",
];

#[rustfmt::skip]
pub const VERBS: &[&str] = &[
    "reviews", "approves", "updates", "records", "checks", "tracks", "sends", "receives",
    "confirms", "rejects", "schedules", "prepares", "reports", "requires", "includes", "covers",
    "replaces", "reduces", "increases", "delays", "handles", "signs", "measures", "compares",
    "explains", "lists", "describes", "stores", "archives", "notifies", "escalates", "assigns",
    "closes", "opens", "collects", "verifies", "calculates", "summarises", "publishes", "returns",
];

#[rustfmt::skip]
pub const SUBJECTS: &[&str] = &[
    "the team", "the manager", "the committee", "each department", "our staff", "the auditor",
    "the client", "the director", "every analyst", "the coordinator", "the owner", "the lead",
    "the board", "a volunteer", "the night shift", "the regional office",
];

#[rustfmt::skip]
pub const PREPOSITIONS: &[&str] = &[
    "before", "after", "during", "within", "for", "under", "against", "across", "beyond",
    "without", "alongside", "behind",
];

#[rustfmt::skip]
pub const TIMES: &[&str] = &[
    "each quarter", "every monday", "within ten days", "by the end of the month",
    "after the review", "before the deadline", "twice a year", "at the start of each week",
    "on the first friday", "once the form is signed", "during the busy season", "overnight",
];

#[rustfmt::skip]
pub const CONNECTIVES: &[&str] = &[
    "In practice", "As a rule", "However", "For example", "In most cases", "Since last year",
    "Where possible", "As agreed", "In short", "Otherwise", "Meanwhile", "By contrast",
];

/// Words `demo-embed` drops (the server's list, `server/src/llm/demo_embed.rs`).
#[rustfmt::skip]
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
    "how", "i", "in", "is", "it", "its", "of", "on", "or", "our", "that", "the", "this", "to",
    "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
];
