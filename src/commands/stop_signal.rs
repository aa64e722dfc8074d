//! The signals that end a command which otherwise runs until told to stop (`proxy`,
//! `consume --follow`): Ctrl-C (SIGINT) or SIGTERM, after which the command returns normally.

/// Resolves at the first SIGINT or SIGTERM. The handlers are installed when this is first
/// polled; from then on those signals no longer kill the process.
pub async fn wait_for_stop() {
    #[cfg(unix)]
    {
        if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
