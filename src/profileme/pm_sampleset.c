/* Placeholder until the parser lands. */
#include "profileme/pm_sampleset.h"
