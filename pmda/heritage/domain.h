/*
 * The heritage PMDA's domain.  416: free in PCP's registry
 * ($PCP_VAR_DIR/pmns/stdpmid.pcp of PCP 6.0.3 assigns 1..255 and reserves
 * 511; it lists 256..510 as free slots) and outside the range PCP hands out
 * to its own PMDAs, so a PCP update will not take it.  A site where another
 * local PMDA uses 416 installs with another number (pmdaheritage(1)).
 */
#define HERITAGE 416
