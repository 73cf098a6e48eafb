# Retargets PAPI's own ctests/data_range.c (fetched with PAPI's source, never
# committed here) at the itanium2 component, the way PAPI's data-range page
# and doc/papi-contract.md 6.2 say a range component reuses it: its
# events instead of Itanium's libpfm names, its component index instead of 0.
# (-DITANIUM2 on the command line passes the test's first guard.)  Each
# replaced line is marked, and the Makefile counts the marks, so a PAPI tree
# whose data_range.c differs fails the build instead of skipping the test.
s|^#if defined(linux) && defined(__ia64__)$|#if 1 /* papi-heritage: any Linux, events of the itanium2 component */|
s|sprintf( event_name\[0\], "loads_retired" );|sprintf( event_name[0], "itanium2:::LOADS_RETIRED" ); /* papi-heritage */|
s|sprintf( event_name\[1\], "stores_retired" );|sprintf( event_name[1], "itanium2:::STORES_RETIRED" ); /* papi-heritage */|
s|PAPI_assign_eventset_component( EventSet, 0 );|PAPI_assign_eventset_component( EventSet, PAPI_get_component_index( "itanium2" ) ); /* papi-heritage */|
