/*
 * types.c - DWARF type DIEs to struct dw_type (dwarf.h), for the argument decoder of
 * the tracer: base types by DW_ATE encoding (only plain char is a character type;
 * signed and unsigned char are integers), pointers, references, typedefs (their
 * name, their target's shape), structs/classes/unions with members and bit fields,
 * enums with enumerators, arrays (one level per dimension), function types.
 * const/volatile/restrict/atomic are stripped.
 *
 * Every DIE is converted once per index build: a hash map from DIE offset to the
 * converted type makes shared types shared and lets self-referencing types
 * (struct node { struct node *next; }) terminate, because a type is entered in the
 * map before its members are converted. A typedef copies its target's shape; when
 * the target is still being converted (a cycle through the typedef), the copy waits
 * until the outermost conversion returns.
 */
#include "dwarf/dwarf_internal.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A converted type plus what only the converter needs. */
struct tnode {
    struct dw_type t;
    bool busy; /* members still being converted */
};

struct slot {
    Dwarf_Off key; /* DIE offset + 1; 0 = empty */
    struct tnode *val;
};

struct fixup {
    struct tnode *typedef_node;
    struct tnode *real;
};

struct type_conv {
    struct arena *a;
    struct slot *slots;
    size_t cap, used;
    struct fixup *fix;
    size_t n_fix, cap_fix;
    int depth;
    struct tnode *unknown;
};

struct type_conv *type_conv_new(struct arena *a)
{
    struct type_conv *tc = calloc(1, sizeof *tc);
    if (!tc)
        abort();
    tc->a = a;
    tc->cap = 1024;
    tc->slots = calloc(tc->cap, sizeof *tc->slots);
    if (!tc->slots)
        abort();
    tc->unknown = arena_alloc(a, sizeof *tc->unknown);
    tc->unknown->t.kind = DWT_VOID;
    return tc;
}

void type_conv_free(struct type_conv *tc)
{
    if (!tc)
        return;
    free(tc->slots);
    free(tc->fix);
    free(tc);
}

const struct dw_type *type_conv_unknown(struct type_conv *tc)
{
    return &tc->unknown->t;
}

static size_t slot_of(const struct type_conv *tc, Dwarf_Off key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (tc->cap - 1);
    while (tc->slots[i].key && tc->slots[i].key != key)
        i = (i + 1) & (tc->cap - 1);
    return i;
}

static struct tnode *lookup(const struct type_conv *tc, Dwarf_Off off)
{
    return tc->slots[slot_of(tc, off + 1)].val;
}

static void insert(struct type_conv *tc, Dwarf_Off off, struct tnode *n)
{
    if (2 * (tc->used + 1) > tc->cap) {
        struct slot *old = tc->slots;
        size_t old_cap = tc->cap;
        tc->cap *= 2;
        tc->slots = calloc(tc->cap, sizeof *tc->slots);
        if (!tc->slots)
            abort();
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].key)
                tc->slots[slot_of(tc, old[i].key)] = old[i];
        free(old);
    }
    size_t i = slot_of(tc, off + 1);
    if (!tc->slots[i].key)
        tc->used++;
    tc->slots[i].key = off + 1;
    tc->slots[i].val = n;
}

static struct tnode *new_node(struct type_conv *tc, Dwarf_Die *die, enum dw_type_kind kind)
{
    struct tnode *n = arena_alloc(tc->a, sizeof *n);
    n->t.kind = kind;
    insert(tc, dwarf_dieoffset(die), n);
    return n;
}

static uint64_t udata(Dwarf_Die *die, int name, uint64_t dflt)
{
    Dwarf_Attribute at;
    Dwarf_Word v;
    return dwarf_attr_integrate(die, name, &at) && dwarf_formudata(&at, &v) == 0 ? v : dflt;
}

static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute at;
    return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &at));
}

static bool die_is_c(Dwarf_Die *die)
{
    Dwarf_Die cu;
    if (!dwarf_diecu(die, &cu, NULL, NULL))
        return false;
    int lang = dwarf_srclang(&cu);
    return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
           lang == DW_LANG_C11;
}

/* The DIE named by die's DW_AT_type, or false when it has none. */
static bool type_die(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute at;
    return dwarf_attr_integrate(die, DW_AT_type, &at) && dwarf_formref_die(&at, out);
}

static bool is_qualifier(int tag)
{
    return tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
           tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type ||
           tag == DW_TAG_immutable_type || tag == DW_TAG_shared_type;
}

static struct tnode *convert(struct type_conv *tc, Dwarf_Die *die);

/* The converted DW_AT_type of die, the unknown type when it has none. */
static struct tnode *convert_ref(struct type_conv *tc, Dwarf_Die *die)
{
    Dwarf_Die t;
    return type_die(die, &t) ? convert(tc, &t) : tc->unknown;
}

static const char *name_or(const struct tnode *n, const char *dflt)
{
    return n->t.name ? n->t.name : dflt;
}

static void convert_base(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    n->t.name = arena_strdup(tc->a, die_name(die));
    n->t.size = udata(die, DW_AT_byte_size, 0);
    switch (udata(die, DW_AT_encoding, 0)) {
    case DW_ATE_boolean:
        n->t.kind = DWT_BOOL;
        break;
    case DW_ATE_signed:
        n->t.kind = DWT_SIGNED;
        break;
    case DW_ATE_unsigned:
    case DW_ATE_UTF:
        n->t.kind = DWT_UNSIGNED;
        break;
    case DW_ATE_signed_char:
    case DW_ATE_unsigned_char:
        /* Only plain char is text: signed char and unsigned char (uint8_t, int8_t)
         * are small numbers in real C, so they stay numbers whatever their value. */
        if (!n->t.name || strcmp(n->t.name, "char") == 0)
            n->t.kind = DWT_CHAR;
        else if (udata(die, DW_AT_encoding, 0) == DW_ATE_signed_char)
            n->t.kind = DWT_SIGNED;
        else
            n->t.kind = DWT_UNSIGNED;
        break;
    case DW_ATE_float:
        n->t.kind = DWT_FLOAT;
        break;
    default: /* complex, decimal float, fixed point: undecoded */
        n->t.kind = DWT_VOID;
    }
}

static void convert_pointer(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    n->t.size = udata(die, DW_AT_byte_size, 8);
    struct tnode *target = convert_ref(tc, die);
    bool is_ref = n->t.kind == DWT_REFERENCE;
    const char *suffix = !is_ref ? "*" : dwarf_tag(die) == DW_TAG_reference_type ? "&" : "&&";
    n->t.target = target == tc->unknown && !is_ref ? NULL : &target->t;
    const char *tn = name_or(target, target == tc->unknown ? "void" : "(anonymous)");
    const char *paren = target->t.kind == DWT_FUNCTION ? strstr(tn, " (") : NULL;
    if (paren) /* "int (int)" -> "int (*)(int)" */
        n->t.name = arena_printf(tc->a, "%.*s (%s)%s", (int)(paren - tn), tn, suffix, paren + 1);
    else
        n->t.name = arena_printf(tc->a, "%s %s", tn, suffix);
}

static uint64_t member_location(Dwarf_Die *m)
{
    Dwarf_Attribute at;
    if (!dwarf_attr_integrate(m, DW_AT_data_member_location, &at))
        return 0;
    Dwarf_Word v;
    if (dwarf_formudata(&at, &v) == 0)
        return v;
    Dwarf_Op *ops; /* DWARF 2 style: DW_OP_plus_uconst N */
    size_t nops;
    if (dwarf_getlocation(&at, &ops, &nops) == 0 && nops == 1 &&
        ops[0].atom == DW_OP_plus_uconst)
        return ops[0].number;
    return 0;
}

static void convert_members(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    Dwarf_Die c;
    size_t count = 0;
    if (dwarf_child(die, &c) == 0)
        do {
            int tag = dwarf_tag(&c);
            count += (tag == DW_TAG_member && !dwarf_hasattr(&c, DW_AT_declaration)) ||
                     tag == DW_TAG_inheritance;
        } while (dwarf_siblingof(&c, &c) == 0);
    if (!count)
        return;
    struct dw_member *ms = arena_alloc(tc->a, count * sizeof *ms);
    size_t i = 0;
    dwarf_child(die, &c);
    do {
        int tag = dwarf_tag(&c);
        if (!((tag == DW_TAG_member && !dwarf_hasattr(&c, DW_AT_declaration)) ||
              tag == DW_TAG_inheritance))
            continue;
        struct dw_member *m = &ms[i++];
        m->name = tag == DW_TAG_member ? arena_strdup(tc->a, die_name(&c)) : NULL;
        m->offset = member_location(&c);
        m->bit_size = (uint32_t)udata(&c, DW_AT_bit_size, 0);
        if (m->bit_size && dwarf_hasattr(&c, DW_AT_data_bit_offset)) {
            uint64_t bits = udata(&c, DW_AT_data_bit_offset, 0);
            m->offset = bits / 8;
            m->bit_offset = bits % 8;
        } else if (m->bit_size && dwarf_hasattr(&c, DW_AT_bit_offset)) {
            /* DWARF 2/3: counted from the most significant bit of the storage unit */
            uint64_t unit = udata(&c, DW_AT_byte_size, 0);
            uint64_t bits = m->offset * 8 + unit * 8 - udata(&c, DW_AT_bit_offset, 0) -
                            m->bit_size;
            m->offset = bits / 8;
            m->bit_offset = bits % 8;
        }
        m->type = &convert_ref(tc, &c)->t;
    } while (i < count && dwarf_siblingof(&c, &c) == 0);
    n->t.members = ms;
    n->t.n_members = i;
}

static void convert_struct(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    const char *name = die_name(die);
    if (name && die_is_c(die))
        n->t.name = arena_printf(tc->a, "%s %s",
                                 n->t.kind == DWT_UNION ? "union" : "struct", name);
    else
        n->t.name = arena_strdup(tc->a, name);
    n->t.size = udata(die, DW_AT_byte_size, 0);
    const char *file = dwarf_decl_file(die);
    n->t.system_header = file && strncmp(file, "/usr/include/", 13) == 0;
    n->busy = true;
    convert_members(tc, die, n);
    n->busy = false;
}

static void convert_enum(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    const char *name = die_name(die);
    n->t.name = name && die_is_c(die) ? arena_printf(tc->a, "enum %s", name)
                                      : arena_strdup(tc->a, name);
    n->t.size = udata(die, DW_AT_byte_size, 0);
    struct tnode *under = convert_ref(tc, die);
    n->t.target = under == tc->unknown ? NULL : &under->t;
    bool is_unsigned = under->t.kind == DWT_UNSIGNED || under->t.kind == DWT_BOOL;
    Dwarf_Die c;
    size_t count = 0;
    if (dwarf_child(die, &c) == 0)
        do
            count += dwarf_tag(&c) == DW_TAG_enumerator;
        while (dwarf_siblingof(&c, &c) == 0);
    if (!count)
        return;
    struct dw_enumerator *es = arena_alloc(tc->a, count * sizeof *es);
    size_t i = 0;
    dwarf_child(die, &c);
    do {
        if (dwarf_tag(&c) != DW_TAG_enumerator)
            continue;
        Dwarf_Attribute at;
        Dwarf_Sword sv = 0;
        Dwarf_Word uv = 0;
        if (dwarf_attr(&c, DW_AT_const_value, &at)) {
            if (is_unsigned && dwarf_whatform(&at) != DW_FORM_sdata)
                dwarf_formudata(&at, &uv), sv = (Dwarf_Sword)uv;
            else
                dwarf_formsdata(&at, &sv);
        }
        es[i].name = arena_strdup(tc->a, die_name(&c));
        es[i++].value = sv;
    } while (i < count && dwarf_siblingof(&c, &c) == 0);
    n->t.enumerators = es;
    n->t.n_enumerators = i;
}

/* The element count of one DW_TAG_subrange_type (0 = unknown). */
static uint64_t subrange_count(Dwarf_Die *sr)
{
    Dwarf_Attribute at;
    Dwarf_Word v;
    if (dwarf_attr(sr, DW_AT_count, &at) && dwarf_formudata(&at, &v) == 0)
        return v;
    if (!dwarf_attr(sr, DW_AT_upper_bound, &at) || dwarf_formudata(&at, &v) != 0)
        return 0;
    uint64_t lower = udata(sr, DW_AT_lower_bound, 0);
    return v >= lower ? v - lower + 1 : 0;
}

/* int a[2][3]: the array DIE becomes array(2) of array(3) of int. */
static void convert_array(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    uint64_t counts[16];
    size_t dims = 0;
    Dwarf_Die c;
    if (dwarf_child(die, &c) == 0)
        do
            if (dwarf_tag(&c) == DW_TAG_subrange_type && dims < 16)
                counts[dims++] = subrange_count(&c);
        while (dwarf_siblingof(&c, &c) == 0);
    if (!dims)
        counts[dims++] = 0;
    struct tnode *elem = convert_ref(tc, die);
    for (size_t d = dims; d-- > 0;) {
        struct tnode *level = d == 0 ? n : arena_alloc(tc->a, sizeof *level);
        level->t.kind = DWT_ARRAY;
        level->t.target = &elem->t;
        level->t.count = counts[d];
        level->t.size = counts[d] * elem->t.size;
        level->t.name = arena_printf(tc->a, "%s[%llu]", name_or(elem, "?"),
                                     (unsigned long long)counts[d]);
        elem = level;
    }
    if (dims == 1 && dwarf_hasattr(die, DW_AT_byte_size))
        n->t.size = udata(die, DW_AT_byte_size, n->t.size);
}

static void convert_function(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    struct tnode *ret = convert_ref(tc, die);
    n->t.target = ret == tc->unknown ? NULL : &ret->t;
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    Dwarf_Die c;
    if (dwarf_child(die, &c) == 0)
        do {
            int tag = dwarf_tag(&c);
            const char *pn = NULL;
            if (tag == DW_TAG_unspecified_parameters)
                pn = "...";
            else if (tag == DW_TAG_formal_parameter)
                pn = name_or(convert_ref(tc, &c), "?");
            if (pn && len < sizeof buf) {
                int w = snprintf(buf + len, sizeof buf - len, "%s%s", len ? ", " : "", pn);
                len += w > 0 ? (size_t)w : 0;
            }
        } while (dwarf_siblingof(&c, &c) == 0);
    n->t.name = arena_printf(tc->a, "%s (%s)", name_or(ret, "void"), len ? buf : "void");
}

/* A typedef takes its target's shape and keeps its own name. The target is found by
 * skipping further typedefs and qualifiers in the DIEs, so the copy always comes from
 * a type that is not a typedef. */
static void convert_typedef(struct type_conv *tc, Dwarf_Die *die, struct tnode *n)
{
    n->t.name = arena_strdup(tc->a, die_name(die));
    Dwarf_Die t = *die;
    bool found = false;
    for (int hops = 0; !found && hops < 64 && type_die(&t, &t); hops++) {
        int tag = dwarf_tag(&t);
        found = tag != DW_TAG_typedef && !is_qualifier(tag);
    }
    struct tnode *real = found ? convert(tc, &t) : tc->unknown;
    if (real->busy) {
        if (tc->n_fix == tc->cap_fix) {
            tc->cap_fix = tc->cap_fix ? 2 * tc->cap_fix : 16;
            tc->fix = realloc(tc->fix, tc->cap_fix * sizeof *tc->fix);
            if (!tc->fix)
                abort();
        }
        tc->fix[tc->n_fix++] = (struct fixup){n, real};
        return;
    }
    const char *name = n->t.name;
    n->t = real->t;
    n->t.name = name;
}

static struct tnode *convert(struct type_conv *tc, Dwarf_Die *die)
{
    struct tnode *n = lookup(tc, dwarf_dieoffset(die));
    if (n)
        return n;
    int tag = dwarf_tag(die);
    if (is_qualifier(tag)) {
        n = convert_ref(tc, die);
        insert(tc, dwarf_dieoffset(die), n);
        return n;
    }
    tc->depth++;
    switch (tag) {
    case DW_TAG_base_type:
        convert_base(tc, die, n = new_node(tc, die, DWT_VOID));
        break;
    case DW_TAG_pointer_type:
        convert_pointer(tc, die, n = new_node(tc, die, DWT_POINTER));
        break;
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
        convert_pointer(tc, die, n = new_node(tc, die, DWT_REFERENCE));
        break;
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
        convert_struct(tc, die, n = new_node(tc, die, DWT_STRUCT));
        break;
    case DW_TAG_union_type:
        convert_struct(tc, die, n = new_node(tc, die, DWT_UNION));
        break;
    case DW_TAG_enumeration_type:
        convert_enum(tc, die, n = new_node(tc, die, DWT_ENUM));
        break;
    case DW_TAG_array_type:
        n = new_node(tc, die, DWT_ARRAY);
        n->busy = true; /* its element type may name it through a typedef */
        convert_array(tc, die, n);
        n->busy = false;
        break;
    case DW_TAG_subroutine_type:
        convert_function(tc, die, n = new_node(tc, die, DWT_FUNCTION));
        break;
    case DW_TAG_typedef:
        convert_typedef(tc, die, n = new_node(tc, die, DWT_VOID));
        break;
    default: /* unspecified_type (nullptr_t), ptr_to_member_type, ...: undecoded */
        n = new_node(tc, die, DWT_VOID);
        n->t.name = arena_strdup(tc->a, die_name(die));
        n->t.size = udata(die, DW_AT_byte_size, 0);
    }
    if (--tc->depth == 0) {
        for (size_t i = 0; i < tc->n_fix; i++) {
            struct tnode *td = tc->fix[i].typedef_node;
            const char *name = td->t.name;
            td->t = tc->fix[i].real->t;
            td->t.name = name;
        }
        tc->n_fix = 0;
    }
    return n;
}

const struct dw_type *type_conv_of(struct type_conv *tc, Dwarf_Die *die)
{
    Dwarf_Die t;
    if (!type_die(die, &t))
        return NULL;
    struct tnode *n = convert(tc, &t);
    return n == tc->unknown ? NULL : &n->t;
}
