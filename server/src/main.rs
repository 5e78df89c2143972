//! The `agentchat` command: `serve` (the default), `migrate`, `create-admin`, `config check`,
//! `secrets rotate`, and the hidden `extract-document`, the child the server reads PDFs and
//! HTML in.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use agentchat::auth::password::{self, PasswordHasher};
use agentchat::banner;
use agentchat::config::{report, Settings};
use agentchat::db::{self, models::role, models::user};
use agentchat::knowledge::extract::child::{self as extract_child, ExtractArgs};
use agentchat::startup::{prepare_database, Application};
use agentchat::telemetry;

/// mimalloc instead of glibc malloc: about a fifth of the server's CPU under load was
/// malloc/free, and glibc kept hundreds of MiB (argon2's 19 MiB buffers, closed streams)
/// in per-thread arenas after they were freed. Built with `no_thp`: with transparent huge
/// pages set to `always`, the 2 MiB pages backing mimalloc's arenas cost about 17 MiB idle
/// and 18 MiB per 1,000 open streams. Measured by `tests/load/run.sh`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Shown after `--help`: the settings people reach for first.
const SETTINGS_HELP: &str = "\
Most used settings (environment variable, or the same key in the TOML file):
  DATABASE_URL              Postgres URL [postgres://postgres@127.0.0.1:5432/agentchat]
  AGENTCHAT_BIND            listen address [127.0.0.1:8080]
  AGENTCHAT_LLM_PROVIDER    openai | anthropic | demo [demo: offline, no key needed]
  AGENTCHAT_LLM_BASE_URL    e.g. https://api.openai.com/v1
  AGENTCHAT_LLM_API_KEY     the provider's key
  AGENTCHAT_LLM_MODEL       the default model
  AGENTCHAT_REGISTRATION    open | closed [open: the first account becomes admin]
  AGENTCHAT_JWT_SECRET      >= 32 bytes [generated and kept in the database]
Every setting, with its default: agentchat.example.toml; effective values: agentchat config check";

#[derive(Parser)]
#[command(
    name = "agentchat",
    version,
    about = "Multi-user LLM agent chat server",
    after_help = SETTINGS_HELP
)]
struct Cli {
    /// Optional TOML settings file (environment variables override it).
    #[arg(long, env = "AGENTCHAT_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (the default when no command is given).
    Serve,
    /// Create the database if needed, apply pending migrations, and exit.
    Migrate,
    /// Create an admin account (password from AGENTCHAT_ADMIN_PASSWORD or standard input).
    ///
    /// The password is read from AGENTCHAT_ADMIN_PASSWORD or, when that is unset, from the
    /// first line of standard input — never from the command line.
    CreateAdmin {
        #[arg(long)]
        username: String,
    },
    /// Inspect the settings.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Manage the secrets the database keeps.
    Secrets {
        #[command(subcommand)]
        action: SecretsAction,
    },
    /// Internal: the limited child process a document is read in (document on standard
    /// input, JSON answer on standard output). Started by the server, not by people.
    #[command(hide = true)]
    ExtractDocument(ExtractArgs),
}

#[derive(Subcommand)]
enum SecretsAction {
    /// Re-seal the provider keys the admin API stored under the key now set
    /// (AGENTCHAT_SECRET_KEY; unset: store them in clear). Stop the servers, set the new
    /// key, run this with the old one, then start them with the new key. Keys stored in
    /// clear are sealed too: run it without --from after setting a key the first time.
    Rotate {
        /// The key they are sealed with now (32 bytes in base64).
        #[arg(long)]
        from: Option<String>,
    },
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Print every effective setting and where it came from (default, file, environment),
    /// secrets hidden; exit non-zero when a value is invalid.
    Check,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The extraction child starts no runtime and reads no settings: it only limits itself,
    // reads its document and answers.
    if let Some(Command::ExtractDocument(args)) = cli.command {
        return extract_child::main(args);
    }
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(e) => {
            eprintln!("agentchat: starting the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("agentchat: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Config {
        action: ConfigAction::Check,
    } = command
    {
        let entries = report::entries(&settings, cli.config.as_deref(), |k| std::env::var(k).ok());
        print!("{}", report::render(&entries));
        for (name, near) in unknown_env() {
            let hint = near
                .map(|n| format!(" (did you mean {n}?)"))
                .unwrap_or_default();
            eprintln!("agentchat: warning: {name} is not a setting{hint}");
        }
        println!("# settings are valid");
        return ExitCode::SUCCESS;
    }
    let _telemetry = telemetry::init(&settings.telemetry);
    let result = match command {
        Command::Serve => serve(settings).await,
        Command::Migrate => prepare_database(&settings).await,
        Command::CreateAdmin { username } => create_admin(settings, &username).await,
        Command::Config { .. } | Command::ExtractDocument(_) => Ok(()),
        Command::Secrets {
            action: SecretsAction::Rotate { from },
        } => rotate_secrets(&settings, from.as_deref()).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentchat: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    tracing::info!(database = %settings.database.url.redacted(), bind = %settings.bind, "starting");
    let app = Application::build(settings).await?;
    let has_users = match app.state().pool.get().await {
        Ok(mut conn) => user::any_exist(&mut conn).await.ok(),
        Err(_) => None,
    };
    let facts = app.start_facts(
        has_users,
        unknown_env(),
        std::env::args()
            .next()
            .unwrap_or_else(|| "agentchat".to_owned()),
    );
    print!(
        "{}",
        banner::render(&app.state().settings, &facts, banner::use_colour())
    );
    app.run_until_stopped().await?;
    Ok(())
}

/// `AGENTCHAT_` variables in this process's environment that are not settings.
fn unknown_env() -> Vec<(String, Option<&'static str>)> {
    agentchat::config::env::unknown(std::env::vars().map(|(k, _)| k))
}

async fn rotate_secrets(settings: &Settings, from: Option<&str>) -> anyhow::Result<()> {
    use agentchat::db::sealed::SealingKey;
    let from = from
        .map(|f| SealingKey::from_base64(f).map_err(|e| anyhow::anyhow!("--from {e}")))
        .transpose()?;
    let to = SealingKey::of(settings);
    prepare_database(settings).await?;
    let pool = db::build_pool(&settings.database)?;
    let mut conn = pool.get().await?;
    let n = agentchat::catalogue::entry::rotate(&mut conn, from.as_ref(), to.as_ref()).await?;
    let how = if to.is_some() {
        "sealed under AGENTCHAT_SECRET_KEY"
    } else {
        "stored in clear (AGENTCHAT_SECRET_KEY is unset)"
    };
    println!("{n} provider key(s) {how}");
    Ok(())
}

async fn create_admin(settings: Settings, username: &str) -> anyhow::Result<()> {
    let password = match std::env::var("AGENTCHAT_ADMIN_PASSWORD") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            let mut line = String::new();
            std::io::stdin().read_to_string(&mut line)?;
            line.lines().next().unwrap_or_default().to_owned()
        }
    };
    password::check_length(&password).map_err(anyhow::Error::msg)?;
    agentchat::auth::session::check_username(username)?;
    prepare_database(&settings).await?;
    let pool = db::build_pool(&settings.database)?;
    let hash = PasswordHasher::new(1)
        .hash(secrecy::SecretString::from(password))
        .await?;
    let mut conn = pool.get().await?;
    match user::insert(&mut conn, username, &hash, role::ADMIN).await {
        Ok(u) => {
            println!("created admin `{}` ({})", u.username, u.id);
            Ok(())
        }
        Err(e) if db::models::is_unique_violation(&e) => {
            anyhow::bail!("a user named `{username}` already exists")
        }
        Err(e) => Err(e.into()),
    }
}
