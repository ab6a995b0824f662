// The reduction schedule's choices, typed (reduction.cpp searches them, reduction_kernel.cpp
// generates from them); as Tunables — the form the autotuner, the tuning cache and inspect
// see — the keys tpr, rpb, cache, vec and split.
#pragma once

#include "codegen/kernel.h"

namespace braze::codegen {

struct RowTile {
  // Where a thread keeps its elements of the row across the passes: re-read from memory,
  // held in registers, or staged in shared memory (Tunables "cache" 0, 1, 2).
  enum class Hold { Stream = 0, Registers = 1, Shared = 2 };
  int tpr = 32;  // threads per row: a warp, or a block of up to 1024
  int rpb = 1;   // rows a block (warps each taking a row, when tpr is 32)
  Hold hold = Hold::Stream;
  int vec = 1;    // elements a load along the row
  int split = 1;  // blocks of a cluster sharing each row (sm_90); 1: a block has the row
  bool operator==(const RowTile& o) const {
    return tpr == o.tpr && rpb == o.rpb && hold == o.hold && vec == o.vec && split == o.split;
  }
};

// Tunables "tpr", "rpb" and "cache" are required; "vec" and "split" default to 1.
RowTile row_tile_of(const Tunables& t);
// "split" only where it is not 1.
Tunables tunables_of(const RowTile& t);

}  // namespace braze::codegen
