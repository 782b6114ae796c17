/*
 * server.h - the MCP server side of one client connection: the lifecycle
 * (initialize, initialized, ping), tools/list and tools/call, over line-delimited
 * JSON-RPC. The daemon runs mcp_serve() on a thread per connection.
 */
#ifndef STROBE_MCP_SERVER_H
#define STROBE_MCP_SERVER_H

#include <stddef.h>

struct store; /* the daemon's database: opaque here, handed to the engine */
struct mcp_conn;

struct mcp_conn *mcp_conn_new(struct store *store);
void mcp_conn_free(struct mcp_conn *c);

/* Handles one line; returns the response line (malloc'd, no newline) or NULL when
 * the message needs no answer (a notification). */
char *mcp_handle_line(struct mcp_conn *c, const char *line, size_t len);

/* Serves fd until the peer closes it or a write fails; closes fd. on_activity is
 * called after each message (the daemon's idle clock). */
void mcp_serve(int fd, struct store *store, void (*on_activity)(void));
/* Answers a connection the daemon will not serve with one JSON-RPC error (id null,
 * -32000, why as the message), then closes fd. */
void mcp_refuse(int fd, const char *why);

#endif
