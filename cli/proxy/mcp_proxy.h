/*
 * mcp_proxy.h - `strobe mcp`: the stdio MCP server an agent registers, which is a proxy
 * to the daemon's unix socket (docs/PROTOCOL.md, "Transport").
 */
#ifndef STROBE_PROXY_H
#define STROBE_PROXY_H

/* Runs the proxy until stdin ends (or stdout is closed) and returns the exit status.
 *
 * Lines are forwarded unchanged both ways, one JSON-RPC message per line; stdout
 * gets one write per line. The daemon is started when none answers. If the daemon
 * goes away while stdin is open, a new one is started, the client's `initialize`
 * is replayed under a private id (its answer is swallowed) with
 * `notifications/initialized`, and every request that was in flight is answered
 * with JSON-RPC error -32603 asking to retry. A stdin line over 1 MiB is discarded
 * and answered with -32600 (id null). Blank lines are skipped. After stdin ends,
 * the proxy waits (up to 30 s) for the answers to requests in flight, then exits 0.
 * Returns 1 when the daemon cannot be reached at start (the reason goes to
 * stderr). */
int proxy_main(void);

#endif
