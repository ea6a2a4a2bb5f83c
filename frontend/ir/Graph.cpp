// Graph.cpp - placeholder so the frontend library has a source (frontend work
// replaces it).
#include "ir/Graph.h"
