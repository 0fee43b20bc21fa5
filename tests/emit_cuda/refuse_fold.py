# A backward whose plan has host steps the CUDA C launcher does not print (here grid folding: the
# shared weight's partial sums and their sum kernel) is refused, naming the missing piece.
# RUN: grad tests/grad/fold_pipeline.py:scale_rows --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr,w_ptr --out y_ptr --emit cuda
