#pragma once
/// The width of the terminal a program prints to, as Keras's `line_length` habit reads it.

namespace fitscope {

/// The columns of the terminal standard output writes to; where it is no terminal, COLUMNS when set to
/// a positive number; else 0 (a file or a pipe: no width to fit).
int output_columns();

/// output_columns(), or 80 where it is 0.
int terminal_columns();

}  // namespace fitscope
