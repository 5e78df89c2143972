//! The `agentchat` command: `serve` (the default), `migrate`, `create-admin`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use agentchat::auth::password::{self, PasswordHasher};
use agentchat::config::Settings;
use agentchat::db::{self, models::role, models::user};
use agentchat::startup::{prepare_database, Application};
use agentchat::telemetry;

/// mimalloc instead of glibc malloc: about a fifth of the server's CPU under load was
/// malloc/free, and glibc kept hundreds of MiB (argon2's 19 MiB buffers, closed streams)
/// in per-thread arenas after they were freed. Built with `no_thp`: with transparent huge
/// pages set to `always`, the 2 MiB pages backing mimalloc's arenas cost about 17 MiB idle
/// and 18 MiB per 1,000 open streams. Measured by `tests/load/run.sh`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "agentchat",
    version,
    about = "Multi-user LLM agent chat server"
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
    /// Run the server (the default).
    Serve,
    /// Create the database if needed and apply pending migrations, then exit.
    Migrate,
    /// Create an admin account. The password is read from AGENTCHAT_ADMIN_PASSWORD or,
    /// when that is unset, from the first line of standard input — never from the command line.
    CreateAdmin {
        #[arg(long)]
        username: String,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("agentchat: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let _telemetry = telemetry::init(settings.log_format);
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(settings).await,
        Command::Migrate => prepare_database(&settings).await,
        Command::CreateAdmin { username } => create_admin(settings, &username).await,
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
    app.run_until_stopped().await?;
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
    agentchat::auth::session::check_username(username)
        .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
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
