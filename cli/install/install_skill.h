/*
 * install_skill.h - the instructions `strobe install` gives every coding agent: how
 * to debug with strobe's tools, output first, and each tool's limits. The same text
 * goes to each agent in its own format (a skill file, an instructions block).
 */
#ifndef STROBE_INSTALL_SKILL_H
#define STROBE_INSTALL_SKILL_H

/* The instructions as markdown (whole lines, no front matter). */
extern const char install_skill_body[];

/* One-line summary: the skill's description, so the agent knows when to load it. */
extern const char install_skill_summary[];

#endif
