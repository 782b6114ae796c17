/*
 * fastrec.h - the recorder blob of the fast path (ptrace/hooks/fastrec/recorder.c) as the
 * daemon sees it: a flat, position-independent image to copy into the target, and
 * where its two entry points (fast_abi.h) are in it. The image has no relocation and
 * no writable data (the build checks both), so it runs wherever it is copied, from
 * memory that is only readable and executable.
 */
#ifndef STROBE_FASTREC_H
#define STROBE_FASTREC_H

extern const unsigned char fastrec_blob[];
extern const unsigned long fastrec_blob_len;
extern const unsigned long fastrec_enter_offset; /* fast_enter's offset in the blob */
extern const unsigned long fastrec_exit_offset;  /* fast_exit's offset in the blob */

#endif
