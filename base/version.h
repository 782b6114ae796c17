/*
 * version.h - the one version string of Strobe: `strobe --version`, `strobectl
 * --version`, and the serverInfo of the MCP handshake.
 */
#ifndef STROBE_VERSION_H
#define STROBE_VERSION_H

#define STROBE_VERSION "0.1.0"

#endif
