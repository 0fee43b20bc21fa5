# A backward whose plan folds the grid (a weight read by every row program): the CUDA C module's
# kernel loops over its share of the rows, summing d_w into its own row of partials; a sum kernel
# adds the rows in a fixed order, and the launcher allocates the partials, launches the folded
# grid (kad_fold_programs), then the sum kernel.
# RUN: grad tests/grad/fold_pipeline.py:scale_rows --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr,w_ptr --out y_ptr --emit cuda
