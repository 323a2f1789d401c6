import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("t2i_reasonscore")
launch_gradio_widget(module)
