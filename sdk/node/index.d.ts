/** Record the checkpoint `name`: one line `cs1 <CLOCK_MONOTONIC ns> <name>` to the fd in COLDSTART_FD, else nothing. */
export function checkpoint(name: string): void;
/** Longest name written, in bytes of UTF-8; longer names are cut at a character boundary. */
export const MAX_NAME_BYTES: number;
