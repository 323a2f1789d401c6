import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("r2i_score")
launch_gradio_widget(module)
