/* Placeholder until the database lands. */
#include "profileme/pm_db.h"
