/*
 * loader.c - the Python text an adopted process runs first (python_loader).
 *
 * PyRun_SimpleString runs it in __main__'s namespace, so everything happens inside
 * exec(..., {}): no name is left in the program's globals. It loads the agent
 * package from its directory with importlib (sys.path is not touched), and starts
 * it with the session's patterns and breakpoints, which are set before it returns. Whatever goes
 * wrong (an interpreter too old for the agent, a load that fails) is said on the
 * socket, with the token, rather than printed on the program's stderr. The body
 * keeps to syntax that Python 2.7 parses, so even that interpreter gets to say it
 * is too old.
 */
#include "python/python_internal.h"

#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"

/* s as a Python string literal: '...' with \\, \' and control characters escaped
 * (other bytes as they are: the text is UTF-8, as Python source is). */
static void quote(struct strbuf *sb, const char *s)
{
    sb_append(sb, "'", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'')
            sb_printf(sb, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            sb_printf(sb, "\\x%02x", *p);
        else
            sb_append(sb, (const char *)p, 1);
    }
    sb_append(sb, "'", 1);
}

int python_loader(char *buf, size_t cap, const struct python_start *st)
{
    struct strbuf body = {0}, out = {0};
    sb_puts(&body, "import sys\nS = ");
    quote(&body, st->sock);
    sb_puts(&body, "\nT = ");
    quote(&body, st->token);
    sb_puts(&body, "\ndef tell(why):\n"
                   "    import json, socket\n"
                   "    c = socket.socket(socket.AF_UNIX)\n"
                   "    c.connect(S)\n"
                   "    v = '%d.%d.%d' % tuple(sys.version_info[:3])\n"
                   "    c.sendall((json.dumps({'hello': {'token': T, 'version': v, "
                   "'error': why}}) + '\\n').encode('ascii'))\n"
                   "    c.close()\n"
                   "if sys.version_info[:2] < (3, 9):\n"
                   "    tell('Python %d.%d is too old: strobe traces CPython 3.9 or newer' "
                   "% tuple(sys.version_info[:2]))\n"
                   "else:\n"
                   "    try:\n"
                   "        import importlib.util as u\n"
                   "        d = ");
    quote(&body, st->agent_dir);
    sb_puts(&body, " + '/_strobe_agent'\n"
                   "        s = u.spec_from_file_location('_strobe_agent', d + '/__init__.py', "
                   "submodule_search_locations=[d])\n"
                   "        m = u.module_from_spec(s)\n"
                   "        sys.modules['_strobe_agent'] = m\n"
                   "        s.loader.exec_module(m)\n"
                   "        m.start(S, T, ");
    quote(&body, st->project_root ? st->project_root : "");
    sb_puts(&body, ", [");
    for (int i = 0; i < st->n_patterns; i++) {
        if (i)
            sb_puts(&body, ", ");
        quote(&body, st->patterns[i]);
    }
    sb_printf(&body, "], %d, %lld, %lld, ", st->depth > 0 ? st->depth : 3,
              (long long)st->sample_after, (long long)st->hot_calls_per_second);
    quote(&body, st->bps_file ? st->bps_file : "");
    sb_puts(&body, ")\n");
    sb_puts(&body, "    except Exception as e:\n"
                   "        tell('the agent did not start: %s: %s' % (type(e).__name__, e))\n");
    sb_puts(&out, "exec(");
    quote(&out, body.buf ? body.buf : "");
    sb_puts(&out, ", {})");
    int rc = -1;
    if (out.buf && !out.oom && !body.oom && out.len < cap) {
        memcpy(buf, out.buf, out.len + 1);
        rc = 0;
    }
    sb_free(&body);
    sb_free(&out);
    return rc;
}
