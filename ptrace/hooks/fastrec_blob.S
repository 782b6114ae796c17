/*
 * fastrec_blob.S - embeds the recorder's flat image (built from ptrace/hooks/fastrec/ by
 * the Makefile into $(B)/fastrec/) and the offsets of its two entry points; the
 * interface is ptrace/hooks/fastrec.h.
 */
#include "fastrec/fastrec_offsets.h"

    .section .rodata
    .balign 64
    .globl fastrec_blob
fastrec_blob:
    .incbin "fastrec/recorder.bin"
fastrec_blob_end:

    .balign 8
    .globl fastrec_blob_len
fastrec_blob_len:
    .quad fastrec_blob_end - fastrec_blob
    .globl fastrec_enter_offset
fastrec_enter_offset:
    .quad FASTREC_ENTER_OFF
    .globl fastrec_exit_offset
fastrec_exit_offset:
    .quad FASTREC_EXIT_OFF

    .section .note.GNU-stack, "", @progbits
