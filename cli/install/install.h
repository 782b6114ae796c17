/*
 * install.h - `strobe install`: registers `strobe mcp` with the coding agents of
 * this user (install_agents.h lists them) and gives them the strobe
 * instructions; --uninstall takes back exactly what it added.
 */
#ifndef STROBE_INSTALL_H
#define STROBE_INSTALL_H

/* argv[0] is "install". Returns the exit status: 0 done, 1 some file could not be
 * read, parsed or written (the others were done), 64 usage. */
int install_main(int argc, char **argv);

#endif
